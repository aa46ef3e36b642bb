"""Every command's flags are checked while the command line is parsed: a bad value is
one line on stderr and exit code 2, never a traceback, and nothing starts.  An error
while a command runs (a database that is not there) is one line and exit code 1;
``--debug`` shows its traceback.  (A missing scenario file: tests/services/test_hand_commands.py.)"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest
from studroom.services.cli.main import build_parser, main
from studroom.services.runtime.settings import DATA_DIR_VAR, DATABASE_URL_VAR

BAD = [
    "room --stores 0", "room --stores 17", "room --instances 0", "room --tables 0", "room --tables -2",
    "room --tables two", "room --pace -5", "room --for -1", "room --for 0", "room --for nan",
    "room --bots-per-table 11", "room --bots-per-table 1", "room --no-such-flag",
    "serve table --stores 0", "serve table --lease-ttl 0", "serve table --pause-ms -1",
    "serve table --instance-id a.b", "serve table --replicas 6",
    "serve relay --batch-size 0", "serve relay --poll-interval 0", "serve relay --replicas 6",
    "serve relay --private-max-age 0", "serve relay --public-max-age -1",
    "serve timer --replicas 0", "serve timer --stats-every -1",
    "serve cashier --takeover-after 0",
    "serve bot --table t01 --seat -1 --player p1", "serve bot --table t01 --seat 0 --player a/b",
    "serve lobby --replicas 0", "serve lobby --instance-id x.y",
    "serve ledger --batch-size 0", "serve ledger --poll-interval -1", "serve ledger --stores 0",
    "serve relay --log-level LOUD",
    "cashier deposit alice 0 --reference r1", "cashier withdraw alice -5 --reference r1",
    "history hands alice --limit 0", "history export t01 0", "replay t01 0", "ledger rake --stores 0",
    "lobby --for -1", "watch t01 --for 0",
    "bench room --seconds 0", "bench room --bots-per-table 9", "bench table --stores 0",
    "bench timer --timers 0", "bench domain --seconds -2", "bench ledger --events 0",
    "bench faults --tables 0", "bench faults --outage -1", "bench faults --only everything",
    "nonsense",
]


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()       # what main() parses with (built once: it imports every command)


@pytest.mark.parametrize("command", BAD)
def test_a_bad_flag_is_one_line_and_exit_code_2(command: str, parser: argparse.ArgumentParser,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(command.split())
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1, captured.err
    assert captured.err.startswith("studroom") and "Traceback" not in captured.err


@pytest.mark.parametrize("command", ["room", "room --tables 2 --bots-per-table 8 --for 0.5 --stores 16 --pace 0",
                                     "serve relay", "serve table --instance-id room-1", "bench room",
                                     "cashier deposit alice 1 --reference r1", "replay t01 1"])
def test_the_defaults_and_good_values_pass(command: str, parser: argparse.ArgumentParser) -> None:
    parser.parse_args(command.split())


NOWHERE = "postgresql://nobody@127.0.0.1:9/nowhere"      # port 9 (discard): nothing listens


def test_a_database_that_is_not_there_is_one_line_on_stderr() -> None:
    env = {**os.environ, DATABASE_URL_VAR: NOWHERE, DATA_DIR_VAR: "/nonexistent-studroom"}
    run = subprocess.run([sys.executable, "-W", "ignore", "-m", "studroom.services.cli", "ledger", "rake"],
                         capture_output=True, text=True, env=env, timeout=60, check=False)
    assert run.returncode == 1
    assert len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith("studroom ledger rake: OperationalError: ") and "--debug" in run.stderr


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(DATABASE_URL_VAR, NOWHERE)
    assert main(["ledger", "rake", "--debug"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last)") and "psycopg.OperationalError" in err


@pytest.mark.parametrize("debug", [False, True])
def test_an_error_holding_a_password_is_said_masked(debug: bool, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A database URL with its password inside an error never reaches the terminal,
    with or without ``--debug``."""
    secret_url = "postgresql://studroom:s3cretpw@127.0.0.1:9/nowhere"

    def fail(args: argparse.Namespace) -> int:
        raise RuntimeError(f"cannot reach {secret_url}")

    parser = build_parser(["ledger", "rake"])
    monkeypatch.setattr("studroom.services.cli.main.build_parser", lambda argv: parser)
    monkeypatch.setattr(parser, "parse_args", lambda argv: argparse.Namespace(
        prog="studroom ledger rake", debug=debug, run=fail))
    assert main(["ledger", "rake"]) == 1
    err = capsys.readouterr().err
    assert "s3cretpw" not in err and "127.0.0.1:9/nowhere" in err
    assert ("Traceback" in err) == debug


def test_a_database_url_that_is_not_one_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(DATABASE_URL_VAR, "mysql://nobody@127.0.0.1/nowhere")
    assert main(["ledger", "rake"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert DATABASE_URL_VAR in err and "Traceback" not in err
