"""The dispute desk's tools at a terminal, on the event stores alone: ``studroom
replay``, ``studroom verify`` and ``studroom history export|hands``.  A stored event
tampered with in PostgreSQL (a changed amount, a changed card, two events swapped) is
caught by verify and replay and named; the tools work on a running room's database
and on a stopped room's data folder (starting its embedded PostgreSQL)."""

from __future__ import annotations

import re
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import psycopg
import pytest
from psycopg import sql
from studroom.domain.events import Acted, CardsDealt, Event
from studroom.domain.hands import spans
from studroom.domain.simulate import SimulatedTable
from studroom.services.cli.main import main
from studroom.services.runtime.servers.attach import running_postgres
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.store.layout import store_of_table, store_schema
from studroom.services.store.postgres import PostgresEventStore

pytestmark = pytest.mark.integration

STORES = 2


def _store(url: str, streams: dict[str, list[Event]]) -> None:
    stores = [PostgresEventStore(url, schema=store_schema(j)) for j in range(STORES)]
    try:
        for table_id, events in streams.items():
            stores[store_of_table(table_id, STORES)].append([(table_id, 0, events)])
    finally:
        for store in stores:
            store.close()


@pytest.fixture(scope="module")
def streams() -> dict[str, list[Event]]:
    return {t: SimulatedTable(t, game, 6, seed=i).play(15)
            for i, (t, game) in enumerate((("t01", "seven_card_stud"), ("t02", "seven_card_stud_hilo")))}


@pytest.fixture
def room_db(database_url: str, streams: dict[str, list[Event]], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A database of its own holding the tables' stores (the layout of ``--stores 2``),
    named by STUDROOM_DATABASE_URL."""
    name = f"disputes_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = database_url.rsplit("/", 1)[0] + "/" + name
    _store(url, streams)
    monkeypatch.setenv("STUDROOM_DATABASE_URL", url)
    yield url
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


ONE_PROCESS = ("--workers", "1")
"""verify in this process where the test is not about workers (each spawned worker
starts an interpreter and imports the room: seconds); the marks' test runs one and two
(``--all``: the same verdicts) and the cores (the marks skip hands in the workers too)."""


def _rewrite(url: str, table_id: str, version: int, change: Any) -> None:
    """Change the stored event ``version`` of ``table_id`` in place, in PostgreSQL."""
    schema = store_schema(store_of_table(table_id, STORES))
    with psycopg.connect(url, autocommit=True) as conn:
        state = conn.execute(sql.SQL("SELECT state FROM {}.events WHERE originator_id = %s AND originator_version = %s")
                             .format(sql.Identifier(schema)), (table_id, version)).fetchone()[0]  # type: ignore[index]
        data = msgspec.json.decode(bytes(state))
        change(data)
        conn.execute(sql.SQL("UPDATE {}.events SET state = %s WHERE originator_id = %s AND originator_version = %s")
                     .format(sql.Identifier(schema)), (msgspec.json.encode(data), table_id, version))


def _swap(url: str, table_id: str, a: int, b: int) -> None:
    schema = sql.Identifier(store_schema(store_of_table(table_id, STORES)))
    with psycopg.connect(url) as conn:
        rows = {v: (topic, state) for v, topic, state in conn.execute(
            sql.SQL("SELECT originator_version, topic, state FROM {}.events WHERE originator_id = %s "
                    "AND originator_version IN (%s, %s)").format(schema), (table_id, a, b)).fetchall()}
        for version, other in ((a, b), (b, a)):
            conn.execute(sql.SQL("UPDATE {}.events SET topic = %s, state = %s WHERE originator_id = %s "
                                 "AND originator_version = %s").format(schema), (*rows[other], table_id, version))


def _hand_of(stream: list[Event], index: int) -> int:
    return next(s.hand_no for s in spans(stream) if s.start <= index < (s.end or 0))


def test_verify_replay_and_exports_of_an_honest_room(room_db: str, streams: dict[str, list[Event]],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    hands = sum(1 for e in streams.values() for s in spans(e) if s.end)
    code, out = _run(capsys, "verify", *ONE_PROCESS)
    assert code == 0, out
    assert re.fullmatch(f"verify: 2 tables, {hands} finished hands "
                        f"\\({sum(1 for e in streams.values() for s in spans(e) if s.cancelled)} cancelled\\): "
                        f"{hands} consistent, 0 different in [0-9.]+ s \\([0-9,]+/s\\)", out.strip().splitlines()[-1])
    code, out = _run(capsys, "verify", "--from", "2025-12-01", "--to", "2025-12-01", "--table", "t02")
    assert code == 0 and ", 0 different" in out and "verify: 1 tables" in out
    code, out = _run(capsys, "verify", "--from", "2025-12-02", *ONE_PROCESS)
    assert code == 0 and "verify: 0 tables, 0 finished hands" in out

    code, out = _run(capsys, "replay", "t01", "3")
    assert code == 0 and "Hand 3 at table t01" in out and "Verdict: CONSISTENT." in out
    player = streams["t01"][spans(streams["t01"])[2].start].seats[0].player  # type: ignore[attr-defined]
    code, out = _run(capsys, "replay", "t01", "3", "--as", player)
    assert code == 0 and f"Seen as {player}" in out

    code, out = _run(capsys, "history", "export", "t01", "3", "--format", "phh")
    assert code == 0 and tomllib.loads(out)["hand"] == 3
    code, out = _run(capsys, "history", "export", "t01", "3", "--format", "text", "--lang", "de", "--as", player)
    assert code == 0 and f"(wie {player} sie sieht)" in out
    code, out = _run(capsys, "history", "hands", player)
    assert code == 0 and " t01 " in out
    code, out = _run(capsys, "history", "sessions", player)
    assert code == 0 and "totals per game and stakes:" in out

    assert main(["replay", "t01", "999"]) == 2
    assert main(["replay", "t99", "1"]) == 2
    assert main(["history", "export", "t01", "3", "--as", "nobody"]) == 2
    with pytest.raises(SystemExit) as refused:          # a usage error, while the flags are parsed
        main(["verify", "--from", "soon"])
    assert refused.value.code == 2


def test_tampered_stored_events_are_caught_and_named(room_db: str, streams: dict[str, list[Event]],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    t01, t02 = streams["t01"], streams["t02"]
    amount = [i for i, e in enumerate(t01) if isinstance(e, Acted) and e.amount][10]
    _rewrite(room_db, "t01", amount + 1, lambda data: data.update(amount=data["amount"] + 20))
    card = [i for i, e in enumerate(t02) if isinstance(e, CardsDealt) and e.street > 0 and e.cards][4]

    def other_card(data: dict[str, Any]) -> None:
        data["cards"][0][1] = "2c" if data["cards"][0][1] != "2c" else "3d"

    _rewrite(room_db, "t02", card + 1, other_card)
    acts = [i for i, e in enumerate(t02) if isinstance(e, Acted)]
    first = next(i for i in acts if i > spans(t02)[-3].start)
    second = next(i for i in acts if i > first)
    _swap(room_db, "t02", first + 1, second + 1)

    code, out = _run(capsys, "verify", *ONE_PROCESS)
    assert code == 1
    lines = out.strip().splitlines()
    assert f"t01 hand {_hand_of(t01, amount)}: DIFFERENT at version {amount + 1}: the record has Acted(" in out
    assert f"t02 hand {_hand_of(t02, card)}: DIFFERENT at version {card + 1}: the record has CardsDealt(" in out
    assert f"t02 hand {_hand_of(t02, first)}: DIFFERENT at version {first + 1}:" in out
    assert ", 3 different in " in lines[-1]

    code, out = _run(capsys, "replay", "t01", str(_hand_of(t01, amount)))
    assert code == 1 and "Verdict: DIFFERENT." in out
    assert f"at version {amount + 1}:" in out and "    amount: record " in out
    code, out = _run(capsys, "replay", "t02", str(_hand_of(t02, card)))
    assert code == 1 and "    cards[0].card: record " in out and "deck (R32): " in out


def test_on_a_running_rooms_database_and_on_a_stopped_rooms_data_folder(
        private_dir: Path, streams: dict[str, list[Event]], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STUDROOM_DATABASE_URL", raising=False)
    monkeypatch.setenv("STUDROOM_DATA_DIR", str(private_dir))
    with EmbeddedPostgres(private_dir) as server:          # a room runs in the folder
        assert running_postgres(private_dir) == server.url
        _store(server.url, {"t01": streams["t01"]})
        code, out = _run(capsys, "verify")
        assert code == 0 and "verify: 1 tables" in out
    code, out = _run(capsys, "replay", "t01", "2")           # the room stopped: started for the command
    assert code == 0 and "Verdict: CONSISTENT." in out
    assert running_postgres(private_dir) is None                # and stopped again
    monkeypatch.setenv("STUDROOM_DATA_DIR", str(private_dir / "nothing-here"))
    with pytest.raises(SystemExit, match="no room's data"):
        main(["verify"])


def test_marks_skip_verified_hands_and_all_checks_them_again(room_db: str, streams: dict[str, list[Event]],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    hands = sum(len([s for s in spans(e) if s.end]) for e in streams.values())
    code, out = _run(capsys, "verify", "--workers", "1")
    assert code == 0 and f"{hands:,} finished hands" in out and "skipped" not in out
    code, out = _run(capsys, "verify")                       # marked: nothing new (default workers: the cores)
    assert code == 0 and "verify: 0 tables, 0 finished hands" in out and f"{hands:,} verified before, skipped" in out
    code, out = _run(capsys, "verify", "--all", "--workers", "2")
    assert code == 0 and f"{hands:,} finished hands" in out and "skipped" not in out

    t01 = streams["t01"]
    amount = [i for i, e in enumerate(t01) if isinstance(e, Acted) and e.amount][3]
    _rewrite(room_db, "t01", amount + 1, lambda data: data.update(amount=data["amount"] + 20))
    named = f"t01 hand {_hand_of(t01, amount)}: DIFFERENT at version {amount + 1}"
    for workers in ("1", "2"):                               # the same verdicts from one process or two
        code, out = _run(capsys, "verify", "--all", "--workers", workers)
        assert code == 1 and named in out
    code, out = _run(capsys, "verify", *ONE_PROCESS)         # the mark's prefix changed: t01 checked again
    assert code == 1 and named in out
