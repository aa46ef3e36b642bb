"""Reconciling a room while it plays (the shared live room, tests/live_room.py): three
tables of bots buying in through the cashier, topping up (between hands: credited; in a
hand: refused and refunded) and leaving, while the room's ledger service books.  Each
reconcile takes a cut of the stores, books up to it beside the service and proves the
books as of the cut: no difference, ten times running.  A PotAwarded altered in
PostgreSQL mid-run is named by the next reconcile (and the store put back after)."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest
from live_room import LiveRoom
from psycopg import sql
from studroom.projections.ledger.cut import book_to_cut
from studroom.projections.ledger.reconcile import Reconciliation, reconcile
from studroom.projections.ledger.sources import all_sources
from studroom.projections.ledger.table_audit import BOOKS_VS_STORE
from studroom.services.players.bot import Bot
from studroom.services.room.bots import Room
from studroom.services.room.plans import TablePlan, table_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TABLES = 3
SEATS = 4
RECONCILES = 10


def test_reconcile_while_bots_play_finds_no_difference_and_then_names_an_altered_pot(live_room: LiveRoom) -> None:
    asyncio.run(_while_playing(live_room))


async def _while_playing(live_room: LiveRoom) -> None:
    tables = live_room.table_ids(f"cut{uuid.uuid4().hex[:4]}", TABLES)
    plans = [TablePlan(t, table_config(i), {s: f"{t}-p{s}" for s in range(SEATS)}) for i, t in enumerate(tables)]
    bots = Room(live_room.url, plans, authority=live_room.authority, seed=19)
    try:
        await bots.start()
        counts = []
        for round_no in range(RECONCILES):
            await _stir(bots, round_no)
            result = await asyncio.to_thread(_reconcile, live_room)
            assert result.clean, [f"{d.check}: {d.event or d.table}: {d.what}" for d in result.differences[:5]]
            counts.append(result.hands)
        moved = _transfers(live_room, tables)
        print(f"{RECONCILES} reconciles while playing, hands {counts}; transfers on the tables {moved}")
        assert counts[-1] > counts[0], "the bots played between the reconciles"
        assert moved["top-ups"] > 0 and moved["left"] > 0
        where, original = _alter_a_pot(live_room, tables)
        try:
            result = await asyncio.to_thread(_reconcile, live_room)
            assert any(d.check == BOOKS_VS_STORE and d.event == where for d in result.differences), \
                result.differences[:5]
        finally:
            _put_back(live_room, where, original)
        assert (await asyncio.to_thread(_reconcile, live_room)).clean
    finally:
        await bots.stop()


async def _stir(room: Room, round_no: int) -> None:
    """Between two reconciles: a bot tops up (refused and refunded if dealt in), and in
    rounds 3 to 5 one bot of a table leaves (cashed out through the cashier); then a
    hand more is played."""
    bots: list[Bot] = room.bots
    hands = room.stats.hands
    bot = bots[round_no % len(bots)]
    assert bot.bank is not None
    await bot.bank(bot.table_id, bot.seat, 2 * bot.decisions.stakes.small_bet)
    if 3 <= round_no < 3 + TABLES:
        await bots[(round_no - 3) * SEATS + 1].leave()
    async with asyncio.timeout(30):
        while room.stats.hands <= hands:
            await asyncio.sleep(0.02)


def _reconcile(live_room: LiveRoom) -> Reconciliation:
    prefix = f"{live_room.name}_p"
    with psycopg.connect(live_room.database_url, autocommit=True) as conn:
        sources = all_sources(conn, schemas=live_room.schemas, cashier_schema=f"{prefix}cashier")
    cut, _ = book_to_cut(live_room.database_url, sources, ledger_schema=f"{prefix}ledger")
    return reconcile(live_room.database_url, sources, ledger_schema=f"{prefix}ledger", cut=cut)


def _transfers(live_room: LiveRoom, tables: list[str]) -> dict[str, int]:
    """The cashier's transfers of the test's players, by kind of entry in the books."""
    query = sql.SQL("SELECT kind, count(*) FROM {}.entries WHERE table_id = ANY(%s) GROUP BY kind").format(
        sql.Identifier(f"{live_room.name}_pledger"))
    with psycopg.connect(live_room.database_url, autocommit=True) as conn:
        kinds = dict(conn.execute(query, (tables,)).fetchall())
    return {"buy-ins": kinds.get("buy-in", 0), "top-ups": kinds.get("buy-in", 0) - TABLES * SEATS,
            "refunded": kinds.get("buy-in refund", 0), "left": kinds.get("cash-out", 0)}


def _alter_a_pot(live_room: LiveRoom, tables: list[str]) -> tuple[str, bytes]:
    """Add 7 chips to a stored PotAwarded of the test's tables: where, and the state it had.
    The first one stored: booked by the reconciles before (each books up to its cut), so
    the books and the store disagree on it (a pot altered before it is booked is booked as
    altered and named by the hand's chips instead)."""
    for schema in live_room.schemas:
        events = sql.Identifier(schema, "events")
        with psycopg.connect(live_room.database_url, autocommit=True) as conn:
            row = conn.execute(sql.SQL(
                "SELECT originator_id, originator_version, state FROM {} WHERE originator_id = ANY(%s) "
                "AND topic LIKE %s ORDER BY notification_id LIMIT 1").format(events),
                (tables, "%PotAwarded")).fetchone()
            if row is None:
                continue
            stream, version, state = row
            conn.execute(sql.SQL(
                "UPDATE {} SET state = convert_to(jsonb_set(convert_from(state, 'UTF8')::jsonb, '{{amount}}', "
                "to_jsonb((convert_from(state, 'UTF8')::jsonb->>'amount')::int + 7))::text, 'UTF8') "
                "WHERE originator_id = %s AND originator_version = %s").format(events), (stream, version))
            return f"{schema} {stream} v{version} (PotAwarded)", bytes(state)
    raise AssertionError("no PotAwarded stored yet")


def _put_back(live_room: LiveRoom, where: str, state: bytes) -> None:
    schema, stream, version, _ = where.split(" ")
    with psycopg.connect(live_room.database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("UPDATE {} SET state = %s WHERE originator_id = %s AND originator_version = %s")
                     .format(sql.Identifier(schema, "events")), (state, stream, int(version.lstrip("v"))))
