"""Clear answers at a terminal (issue 19): a day flag that is no day, or a period that
ends before it starts, is refused naming the flags (exit 2) before anything runs (the
command's ``main``, in the test's process: tests/in_process.py); the output of any
command into a pipe whose reader has gone (``studroom ... | head -1``, a process) ends
quietly, with exit code 141 (services/cli/main.py says why) and nothing on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from in_process import studroom
from psycopg import sql
from studroom.domain.simulate import SimulatedTable
from studroom.services.cli.main import CLOSED_PIPE
from studroom.services.runtime.settings import DATA_DIR_VAR, DATABASE_URL_VAR
from studroom.services.store.layout import store_schema
from studroom.services.store.postgres import PostgresEventStore

NOWHERE = "postgresql://nobody@127.0.0.1:9/nowhere"      # nothing listens: a command that ran would fail (exit 1)
AWAY = {DATABASE_URL_VAR: NOWHERE, DATA_DIR_VAR: "/nonexistent-studroom"}
STUDROOM = [sys.executable, "-W", "ignore", "-m", "studroom.services.cli"]      # the pipes' tests: a process's exit

REFUSED = [
    ("verify --from 2026-02-30", "studroom verify: argument --from: 2026-02-30 is not a day (YYYY-MM-DD)"),
    ("verify --to 2026-12-01T25:00", "studroom verify: argument --to: 2026-12-01T25:00 is not a day (YYYY-MM-DD) "
                                     "or an ISO date and time"),
    ("verify --from 2026-12-05 --to 2026-12-01",
     "studroom verify: --from 2026-12-05 is after --to 2026-12-01: no time between them"),
    ("verify --from 2026-12-01T12:00 --to 2026-12-01T11:59",
     "studroom verify: --from 2026-12-01T12:00:00+00:00 is after --to 2026-12-01T11:59:00+00:00"),
    ("ledger reconcile --from 2026-02-30", "studroom ledger reconcile: argument --from: 2026-02-30 is not a day"),
    ("ledger reconcile --to 2026-1-5", "studroom ledger reconcile: argument --to: 2026-1-5 is not a day (YYYY-MM-DD)"),
    ("ledger reconcile --from 2026-12-01T10:00", "studroom ledger reconcile: argument --from: 2026-12-01T10:00 is not"),
    ("ledger reconcile --from 2026-12-05 --to 2026-12-01",
     "studroom ledger reconcile: --from 2026-12-05 is after --to 2026-12-01: no time between them"),
]


def _studroom(command: list[str], env: dict[str, str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STUDROOM, *command], text=True, env=env, timeout=120, check=False, **kwargs)  # type: ignore[call-overload]


@pytest.mark.parametrize(("command", "said"), REFUSED)
def test_a_day_that_is_none_or_a_reversed_period_is_refused_naming_the_flags(command: str, said: str) -> None:
    run = studroom(command.split(), AWAY)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.splitlines()) == 1 and run.stderr.startswith(said), run.stderr


def test_a_day_and_a_one_day_period_are_what_they_say() -> None:
    for command in ("verify --from 2026-12-01 --to 2026-12-01", "verify --from 2026-12-01T10:00 --to 2026-12-01",
                    "ledger reconcile --from 2026-02-28 --to 2026-02-28"):
        run = studroom(command.split(), AWAY)
        assert run.returncode == 1 and "OperationalError" in run.stderr, run.stderr   # parsed; the database is away


@pytest.fixture
def room_db(database_url: str) -> Iterator[str]:
    """A database of its own holding one played table's store."""
    name = f"pipes_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = database_url.rsplit("/", 1)[0] + "/" + name
    store = PostgresEventStore(url, schema=store_schema(0))
    try:
        store.append([("t01", 0, SimulatedTable("t01", "seven_card_stud", 6, seed=1).play(10))])
    finally:
        store.close()
    yield url
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _nothing_wrong(stderr: str) -> bool:
    """Nothing on stderr but the ledger's note of what it booked."""
    return all(line.startswith("booked ") and line.endswith(" events new to the books") for line in stderr.splitlines())


def _into_a_closed_pipe(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``command`` writing into a pipe whose reading end is already closed."""
    read, write = os.pipe()
    os.close(read)
    try:
        return _studroom(command, env, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)


@pytest.mark.parametrize("buffered", [True, False])
def test_output_into_a_closed_pipe_ends_quietly(room_db: str, buffered: bool) -> None:
    env = {**os.environ, DATABASE_URL_VAR: room_db}
    env.pop("PYTHONUNBUFFERED", None) if buffered else env.update(PYTHONUNBUFFERED="1")
    for command in (["ledger", "statement", "t01-p1"], ["verify"], ["history", "export", "t01", "2"]):
        run = _into_a_closed_pipe(command, env)
        assert run.returncode == CLOSED_PIPE and _nothing_wrong(run.stderr), (command, run.stderr)
    run = _into_a_closed_pipe(["lobby", "--help"], env)
    assert run.returncode in (0, CLOSED_PIPE) and run.stderr == ""     # unbuffered, argparse's help ignores it: 0


def test_a_shell_pipe_into_head_says_nothing_on_stderr(room_db: str) -> None:
    env = {**os.environ, DATABASE_URL_VAR: room_db}
    studroom = " ".join(STUDROOM)
    for command in ("ledger statement t01-p1", "lobby --help"):
        run = subprocess.run(["bash", "-c", f"{studroom} {command} | head -1"], capture_output=True, text=True,
                             env=env, timeout=120, check=False)
        assert run.returncode == 0 and len(run.stdout.splitlines()) == 1 and _nothing_wrong(run.stderr), run.stderr


def test_an_error_that_is_not_a_closed_pipe_is_still_an_error() -> None:
    env = {**os.environ, DATABASE_URL_VAR: NOWHERE}
    run = _into_a_closed_pipe(["ledger", "rake"], env)
    assert run.returncode == 1 and run.stderr.startswith("studroom ledger rake: OperationalError")
