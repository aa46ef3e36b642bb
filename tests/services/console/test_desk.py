"""The operator's desk (services/console/desk.py, desk_books.py) on real servers: the
rake per table and per day is the ledger's own rake report, and a table's row the rake
its stored pots took; the last reconcile runs in the background, clean, beside the
daily timer's file; health lists every service of the live room over an operator's
own connection; the dead letters a relay and a consumer set aside are listed, newest
first, over a read-only service connection.

The books are this module's own (a schema booked from the live room's stores by
:func:`book_to_cut`): nobody else writes them, so two reads agree exactly."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from live_room import LiveRoom
from studroom.domain.events import PotAwarded
from studroom.projections.ledger import reports, schema
from studroom.projections.ledger.cut import book_to_cut
from studroom.projections.ledger.sources import all_sources
from studroom.services.client.table import Refused
from studroom.services.console import desk_ops
from studroom.services.console.desk import Books, Reconciles, dead_letters, health, rake
from studroom.services.console.ops import OPS, OpError
from studroom.services.relay.dead_letters import DeadLetter
from studroom.services.runtime.processes import process
from studroom.services.wire.dead_letters import DeadLetters, Undelivered
from test_replay_op import play_hands

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ROOM_SERVICES = {"table", "relay", "timer", "cashier", "lobby", "history", "ledger"}   # table: two instances


@pytest.fixture(scope="module")
def played(live_room: LiveRoom) -> Iterator[tuple[Books, str, int]]:
    """Books of this module's own, booked after a table of bots played: the books, the
    table, the rake its stored pots took."""
    table, stream = asyncio.run(play_hands(live_room, "desk", hands=2))
    books = Books(live_room.database_url, schemas=tuple(live_room.schemas),
                  cashier_schema=f"{live_room.name}_pcashier", ledger_schema=f"desk{uuid.uuid4().hex[:6]}_ledger")
    with psycopg.connect(books.database_url, autocommit=True) as conn:
        sources = all_sources(conn, schemas=books.schemas, cashier_schema=books.cashier_schema)
    book_to_cut(books.database_url, sources, ledger_schema=books.ledger_schema)
    yield books, table, sum(e.rake for e in stream if isinstance(e, PotAwarded))
    with psycopg.connect(books.database_url, autocommit=True) as conn:
        schema.drop(conn, books.ledger_schema)


def _report(books: Books, by: str) -> list[list[Any]]:
    with psycopg.connect(books.database_url, autocommit=True) as conn:
        return reports.rake(conn, by, books.ledger_schema)[1]


def test_the_rake_per_table_and_per_day_is_the_ledgers_rake_report(played: tuple[Books, str, int]) -> None:
    books, table, raked = played
    by_table, by_day, two_days = (asyncio.run(rake(books, by, days)) for by, days in
                                  (("table", None), ("day", None), ("day", 2)))
    for answer, by in ((by_table, "table"), (by_day, "day")):
        report = _report(books, by)
        assert [[r["key"], r["hands"], r["pots"], r["rake"]] for r in answer["rows"]] == report[:-1]
        assert list(answer["total"].values()) == report[-1][1:]
    mine = next(r for r in by_table["rows"] if r["key"] == table)
    assert raked > 0 and mine["rake"] == raked and mine["hands"] > 0
    assert by_day["total"]["rake"] == by_table["total"]["rake"] == two_days["total"]["rake"]   # all played today
    assert len(two_days["rows"]) == 2 and two_days["rows"][0]["key"] < two_days["rows"][1]["key"]
    for wrong in (("week", None), ("table", 7), ("day", 0), ("day", "7")):
        with pytest.raises(Refused) as refused:
            asyncio.run(rake(books, *wrong))  # type: ignore[arg-type]
        assert refused.value.code == "bad_request"
    away = Books("postgresql://nobody@127.0.0.1:1/none")         # the op, when the database is away
    desk_ops.register(away, Reconciles(away))
    operator = SimpleNamespace(session=SimpleNamespace(link=SimpleNamespace(role="operator", name="floor", nc=None)))
    with pytest.raises(OpError) as refused:
        asyncio.run(OPS["desk_rake"].run(operator, {"by": "table"}))
    assert refused.value.code == "unavailable"


def test_the_last_reconcile_runs_in_the_background_and_finds_the_books_clean(
        played: tuple[Books, str, int], tmp_path: Path) -> None:
    books, _, _ = played
    textfile = tmp_path / "studroom_reconcile.prom"
    textfile.write_text("studroom_reconcile_exit_code 1\nstudroom_reconcile_last_run_timestamp_seconds 1764635400\n"
                        "studroom_reconcile_duration_seconds 42\n")
    asyncio.run(_reconciles(Reconciles(books, textfile=textfile)))


async def _reconciles(reconciles: Reconciles) -> None:
    first = await reconciles.last_reconcile()
    assert first["last"] is None and first["running"] and first["failed"] is None
    assert first["daily"] == {"exit_code": 1, "clean": False, "at_ms": 1764635400000, "seconds": 42}
    await reconciles.wait()
    done = await reconciles.last_reconcile()
    last = done["last"]
    assert not done["running"] and done["failed"] is None, done["failed"]
    assert last["clean"] and last["differences"] == [] and last["difference_count"] == 0, last["differences"]
    assert last["tables"] >= 1 and last["hands"] >= 2 and last["seconds"] >= 0
    assert {line["name"] for line in last["equation"]} >= {"deposits", "rake", "chips on the tables"}
    again = await reconciles.last_reconcile()           # within max_age_s: the same result, none started
    assert again["last"] is last and not again["running"]


def test_health_lists_every_service_of_the_room_over_the_operators_own_connection(live_room: LiveRoom) -> None:
    asyncio.run(_health(live_room))


async def _health(live_room: LiveRoom) -> None:
    nc = await process.connect(live_room.url, "test-desk-operator",
                               creds=live_room.authority.ensure("operator", "deskop"))
    try:
        for _ in range(20):           # the services join discovery in the background
            answer = await health(nc, wait=0.5)
            if len(answer["services"]) >= len(ROOM_SERVICES) + 1:
                break
    finally:
        await nc.drain()
    services = answer["services"]
    assert {s["service"] for s in services} == ROOM_SERVICES
    assert sum(s["service"] == "table" for s in services) == 2
    assert all(s["ready"] == "ready" and s["up_seconds"] >= 0 for s in services), services
    lag = {name for s in services for name in s["lag"]}
    assert any(name.startswith("projection_lag_events.") for name in lag), lag
    assert any(s["counters"] for s in services if s["service"] == "table")


def test_dead_letters_are_listed_newest_first_over_a_service_connection(connect_as: Any) -> None:
    asyncio.run(_dead_letters(connect_as))


async def _dead_letters(connect_as: Any) -> None:
    tag, seq = uuid.uuid4().hex[:6], uuid.uuid4().int % 10**9 + 1
    relay = await connect_as("service", "relay")
    reader = await connect_as("service", "projections")
    try:
        letters = DeadLetters(relay.jetstream(), "test")
        await letters.record(DeadLetter(f"s{tag}", 17, "t01", 4, "CardsDealt", 2, "nobody holds seat 2"))
        await letters.record(Undelivered("STUDROOM_TIMER", "timer", seq, "studroom.timer.t01", 5, "undecodable",
                                         '{"garbage": true}'))
        answer = await dead_letters(reader, limit=200)
        with pytest.raises(Refused):
            await dead_letters(reader, limit=0)
    finally:
        await relay.drain()
        await reader.drain()
    keys = [letter["key"] for letter in answer["letters"]]
    assert answer["count"] >= 2 and f"s{tag}.17.seat2" in keys and f"STUDROOM_TIMER.timer.{seq}" in keys
    relayed = next(x for x in answer["letters"] if x["key"] == f"s{tag}.17.seat2")
    assert relayed["kind"] == "unpublished" and relayed["reason"] == "nobody holds seat 2"
    assert "notification 17 of store" in relayed["what"] and relayed["at_ms"] > 0
    consumed = next(x for x in answer["letters"] if x["key"] == f"STUDROOM_TIMER.timer.{seq}")
    assert consumed["kind"] == "undelivered" and consumed["subject"] == "studroom.timer.t01"
    assert consumed["body"] == '{"garbage": true}'
    times = [x["at_ms"] for x in answer["letters"]]
    assert times == sorted(times, reverse=True)
