"""``studroom ledger close DAY`` on a simulated room's stored day (2025-12-01, UTC): the
day's books sealed once (totals per account class, rake per table and game, each
player's movements, a digest) and reported as JSON, CSV and text; a second close
compares; the seal refuses to change; a stored event of the day altered afterwards is
named by closing the day again and by reconciling the day."""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from studroom.domain.events import TableEvent
from studroom.services.cli.main import main
from studroom.services.store.codec import register_event_types
from studroom.services.store.postgres import PostgresEventStore
from studroom.tools.stored_room import store_room

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

DAY = "2025-12-01"          # the simulated room's clock starts there (domain/simulate.py)


class Room:
    def __init__(self, database_url: str) -> None:
        self.url = database_url
        prefix = f"c{uuid.uuid4().hex[:8]}"
        self.stores = [f"{prefix}_p0", f"{prefix}_p1"]
        self.cashier = f"{prefix}_cashier"
        self.books = f"{prefix}_ledger"
        store_room(database_url, self.stores, self.cashier, events=5_000, tables=3, prefix=prefix)

    def ledger(self, *args: str) -> list[str]:
        return ["ledger", *args, "--schema", self.stores[0], "--schema", self.stores[1],
                "--cashier-schema", self.cashier, "--ledger-schema", self.books]

    def drop(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            for s in [*self.stores, self.cashier, self.books, f"{self.books}_seals"]:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(s)))


@pytest.fixture
def room(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Room]:
    monkeypatch.setenv("STUDROOM_DATABASE_URL", database_url)
    made = Room(database_url)
    yield made
    made.drop()


def test_a_closed_day_is_sealed_once_and_names_a_stored_event_changed_since(
        room: Room, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(room.ledger("close", DAY, "--format", "json")) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert f"{DAY} closed" in err
    assert report["day"] == DAY and report["entries"] > 1000 and len(report["digest"]) == 64
    assert sum(row["net"] for row in report["totals"]) == 0                     # double entry
    assert {row["game"] for row in report["rake"]} and all(row["rake"] > 0 for row in report["rake"])
    assert sum(p["deposited"] for p in report["players"]) > 0

    assert main(room.ledger("close", DAY, "--format", "csv")) == 0             # closed before: compared
    out, err = capsys.readouterr()
    assert "agree with its seal" in err
    assert out.splitlines()[0] == "section,name,figure,value" and f"digest,{DAY},sha-256,{report['digest']}" in out
    assert main(room.ledger("close", DAY)) == 0
    assert f"the books of {DAY} (UTC): {report['entries']:,} entries" in capsys.readouterr().out

    with psycopg.connect(room.url, autocommit=True) as conn, pytest.raises(psycopg.errors.RaiseException):
        conn.execute(sql.SQL("UPDATE {}.days SET digest = 'x'").format(sql.Identifier(f"{room.books}_seals")))

    where = _alter_an_acted(room)
    assert main(room.ledger("reconcile", "--from", DAY, "--to", DAY)) == 1
    out = capsys.readouterr().out
    assert where in out and "the stored event changed since the day was closed" in out
    assert main(room.ledger("close", DAY, "--format", "json")) == 1
    assert f"changed since closed: {where}: the stored event changed" in capsys.readouterr().err


def test_a_day_not_over_is_not_closed(room: Room, capsys: pytest.CaptureFixture[str]) -> None:
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    assert main(room.ledger("close", today)) == 2
    assert "is not over yet" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(room.ledger("close", "2025-02-30"))
    assert usage.value.code == 2 and "argument DAY: 2025-02-30 is not a day" in capsys.readouterr().err


def _alter_an_acted(room: Room) -> str:
    """Add 10 chips to a stored bet of the day: where it is."""
    register_event_types(TableEvent)
    with PostgresEventStore(room.url, schema=room.stores[0], create_table=False) as store:
        note = next(n for n in store.read_notifications(1, 10_000)
                    if type(n.event).__name__ == "Acted" and n.event.amount and n.version > 100)
    with psycopg.connect(room.url, autocommit=True) as conn:
        conn.execute(sql.SQL(
            "UPDATE {}.events SET state = convert_to(jsonb_set(convert_from(state, 'UTF8')::jsonb, '{{amount}}', "
            "to_jsonb((convert_from(state, 'UTF8')::jsonb->>'amount')::int + 10))::text, 'UTF8') "
            "WHERE originator_id = %s AND originator_version = %s").format(sql.Identifier(room.stores[0])),
            (note.stream_id, note.version))
    return f"{room.stores[0]} {note.stream_id} v{note.version}"
