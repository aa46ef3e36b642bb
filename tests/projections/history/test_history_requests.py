"""Players' histories over NATS, on a server in operator mode (docs/design/trust.md):
a player asks about himself only (the server refuses his request on anyone else's
subject, the service refuses another name in the body), an operator about anyone;
the history service runs as the service "history"'s door with just its powers."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import nats.errors
import psycopg
import pytest
from psycopg import sql
from studroom.domain.errors import FORBIDDEN
from studroom.domain.events import Event
from studroom.projections.history import protocol
from studroom.projections.history.answers import HistoryDesk
from studroom.domain.hands import spans
from studroom.projections.history.projector import Projector
from studroom.projections.history.protocol import Hand, Hands, HistoryReply, Sessions
from studroom.projections.history.results import results
from studroom.projections.history.service import HistoryService
from studroom.domain.simulate import SimulatedTable
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.wire import subjects
from studroom.services.wire.protocol import BAD_REQUEST, UNAVAILABLE, UNKNOWN_HAND

pytestmark = pytest.mark.integration


@contextlib.asynccontextmanager
async def history_service(connect_as: Any, database_url: str, events: list[Event]) -> AsyncIterator[None]:
    """A table's stream in a store of its own, and a history service projecting it."""
    prefix = f"q{uuid.uuid4().hex[:8]}_"
    store_schema, history = f"{prefix}p0", f"{prefix}history"
    with PostgresEventStore(database_url, schema=store_schema) as store:
        store.append([("t07", 0, events)])
    projector = Projector(database_url, [store_schema], history_schema=history)
    nc = await connect_as("service", "history-door")      # it answers on its door alone
    service = HistoryService(nc, projector, HistoryDesk(database_url, history), idle_s=0.05)
    stop = asyncio.Event()
    await service.start()
    running = asyncio.create_task(service.run(stop))
    try:
        for _ in range(200):
            if projector.folded == len(events):
                break
            await asyncio.sleep(0.05)
        yield
    finally:
        stop.set()
        await running
        await service.close()
        await nc.close()
        with psycopg.connect(database_url, autocommit=True) as conn:
            for schema in (store_schema, history):
                conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


async def _ask(nc: Any, role: str, name: str, request: Any, subject: str | None = None) -> HistoryReply:
    subject = subject or subjects.history_requests(role, name)
    msg = await nc.request(subject, protocol.encode(request), timeout=3.0)
    return protocol.decode_reply(msg.data)


def test_R23_a_player_gets_his_own_history_and_nobody_elses(connect_as: Any, database_url: str) -> None:
    events = SimulatedTable("t07", "seven_card_stud", 5, seed=21).play(12)
    played = [(span, results(events[span.start:span.end])) for span in spans(events) if span.end and not span.cancelled]
    alice = max({r.player for _, rs in played for r in rs},
                key=lambda p: sum(r.player == p for _, rs in played for r in rs))
    hers = [(span.hand_no, r) for span, rs in played for r in rs if r.player == alice]
    other = next(r.player for _, rs in played for r in rs if r.player != alice)

    async def main() -> None:
        violations: list[str] = []

        async def on_error(error: Exception) -> None:
            violations.append(str(error).lower())

        async with history_service(connect_as, database_url, events):
            nc = await connect_as("player", alice, error_cb=on_error)
            floor = await connect_as("operator", "floor")
            try:
                reply = await _ask(nc, "player", alice, Hands(limit=500))
                assert reply.ok
                assert sorted((h.hand_no, h.net, h.rake_paid) for h in reply.hands) == sorted(
                    (n, r.net, r.rake_paid) for n, r in hers)
                hand_no = hers[0][0]
                text = await _ask(nc, "player", alice, Hand(table_id="t07", hand_no=hand_no, format="text", lang="de"))
                assert text.ok and text.text is not None and f"(wie {alice} sie sieht)" in text.text
                record = await _ask(nc, "player", alice, Hand(table_id="t07", hand_no=hand_no))
                assert record.ok and record.record is not None and record.record.viewer is not None
                phh = await _ask(nc, "player", alice, Hand(table_id="t07", hand_no=hand_no, format="phh"))
                assert phh.ok and phh.text is not None and 'variant = "F7S"' in phh.text
                sessions = await _ask(nc, "player", alice, Sessions())
                assert sessions.ok and sum(s.hands for s in sessions.sessions) == len(hers)

                mine_only = await _ask(nc, "player", alice, Hands(player=other))
                assert not mine_only.ok and mine_only.error is not None and mine_only.error.code == FORBIDDEN
                missing = await _ask(nc, "player", alice, Hand(table_id="t07", hand_no=9999))
                assert missing.error is not None and missing.error.code == UNKNOWN_HAND
                garbled = protocol.decode_reply((await nc.request(subjects.history_requests("player", alice),
                                                                  b'{"type": "Hands", "limit": "x"}', timeout=3)).data)
                assert garbled.error is not None and garbled.error.code == BAD_REQUEST

                before = len(violations)
                with pytest.raises(nats.errors.TimeoutError):        # the server dropped it
                    await _ask(nc, "player", alice, Hands(), subject=subjects.history_requests("player", other))
                assert len(violations) > before and "permissions violation" in violations[-1]

                anyone = await _ask(floor, "operator", "floor", Hands(player=other, limit=500))
                assert anyone.ok and anyone.hands
                nameless = await _ask(floor, "operator", "floor", Hands())
                assert nameless.error is not None and nameless.error.code == BAD_REQUEST
            finally:
                await nc.close()
                await floor.close()

    asyncio.run(main())


def test_a_desk_whose_connection_postgres_dropped_answers_again_and_one_without_a_database_says_unavailable(
        database_url: str) -> None:
    """A terminated backend shows only when its connection is used: the desk opens it
    again once instead of leaving the request unanswered (seen when another test
    terminated every backend of the shared database)."""
    history = f"q{uuid.uuid4().hex[:8]}_history"
    desk = HistoryDesk(database_url, history)
    ask = protocol.encode(Hands())
    try:
        assert desk.answer("player", "alice", ask).ok
        pid = desk._connection().info.backend_pid
        with psycopg.connect(database_url, autocommit=True) as conn:
            assert conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        again = desk.answer("player", "alice", ask)
        assert again.ok, again.error
        assert desk._connection().info.backend_pid != pid
    finally:
        desk.close()
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(history)))
    away = HistoryDesk("postgresql://nobody@127.0.0.1:1/none", history).answer("player", "alice", ask)
    assert not away.ok and away.error is not None and away.error.code == UNAVAILABLE
