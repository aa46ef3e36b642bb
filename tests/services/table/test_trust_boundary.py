"""The trust boundary on a NATS server in operator mode, as the room runs it: every
attack of issue 9 is refused, by the server (permissions) or by the table service (the
domain's ``forbidden`` and its friends), and nothing is stored.

Each identity connects with its own credentials from the session's Authority
(``connect_as``); the table service runs as the service ``table`` on the same server
and stores into PostgreSQL.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import nats
import nats.errors
import psycopg
import pytest
from psycopg import sql
from studroom.domain.cards import show
from studroom.domain.commands import (
    Act, BuyIn, Command, Leave, Muck, OpenTable, PostAnte, Show, SitDown, SitOut, SkipAnte, StartHand, Timeout,
)
from studroom.domain.errors import DUPLICATE_COMMAND, FORBIDDEN
from studroom.domain.events import TableEvent, TurnStarted
from studroom.domain.table import Table
from studroom.services.client.table import TableClient
from studroom.services.store.codec import register_event_types
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.table.service import TableService
from studroom.services.wire import event_messages, protocol, subjects
from studroom.services.wire.partitioning import partition_of
from table_driver import table_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

register_event_types(TableEvent)


def _id() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def store(database_url: str) -> Iterator[PostgresEventStore]:
    """The event store of this module's tables (its schema dropped afterwards)."""
    schema = f"trust_{_id()}_p0"
    event_store = PostgresEventStore(database_url, schema=schema, pool_size=2, max_overflow=2)
    yield event_store
    event_store.close()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@dataclass
class Identity:
    """One authenticated connection, the permission errors the server sent it, and
    a table client speaking as it."""

    nc: Any
    client: TableClient
    violations: list[str] = field(default_factory=list)

    async def refused_by_server(self, action: Any) -> str:
        """Run ``action`` (publish or subscribe), and the server's permission error."""
        before = len(self.violations)
        await action
        await self.nc.flush()
        for _ in range(100):
            if len(self.violations) > before:
                return self.violations[-1].lower()
            await asyncio.sleep(0.02)
        raise AssertionError("the server did not refuse it")


class Room:
    """A table service on the secure server, and identities that talk to it."""

    def __init__(self, connect_as: Any, store: PostgresEventStore) -> None:
        self.connect_as = connect_as
        self.store = store
        self.identities: list[Identity] = []

    async def identity(self, role: str, name: str) -> Identity:
        violations: list[str] = []

        async def on_error(error: Exception) -> None:
            violations.append(str(error))

        nc = await self.connect_as(role, name, error_cb=on_error)
        who = Identity(nc, TableClient(nc, role, name, retry_for=5), violations)
        self.identities.append(who)
        return who

    def stored(self, table_id: str) -> int:
        return len(self.store.load(table_id))

    def table(self, table_id: str) -> Table:
        return Table.replay(self.store.load(table_id))

    async def close(self) -> None:
        for who in self.identities:
            await who.nc.close()


def in_room(connect_as: Any, store: PostgresEventStore, scenario: Callable[[Room], Awaitable[None]], *,
            pause_ms: int = 0) -> None:
    """Run ``scenario`` with a table service (as the service ``table``) on the secure server."""

    async def main() -> None:
        service_nc = await connect_as("service", "table")
        door_nc = await connect_as("service", "table-door")      # commands in, replies out
        service = TableService(service_nc, [store], instance_id=f"trust-{_id()}", pause_ms=pause_ms,
                               door_nc=door_nc)
        await service.start()
        assert service.owned() == list(range(subjects.PARTITIONS))
        room = Room(connect_as, store)
        try:
            await scenario(room)
        finally:
            await room.close()
            await service.close()
            await service_nc.close()
            await door_nc.close()

    asyncio.run(main())


async def ok(who: Identity, table_id: str, command: Command) -> None:
    reply = await who.client.send(table_id, command)
    assert reply.ok, reply


async def refused(who: Identity, table_id: str, command: Command) -> str:
    reply = await who.client.send(table_id, command)
    assert not reply.ok and reply.error is not None, reply
    return reply.error.code


async def two_players(r: Room, table_id: str, **config: Any) -> tuple[Identity, Identity, Identity]:
    """The floor opens ``table_id``; two players sit down themselves and the cashier buys them in."""
    floor = await r.identity("operator", "floor")
    cashier = await r.identity("service", "cashier")
    ann = await r.identity("player", f"ann{_id()}")
    bob = await r.identity("player", f"bob{_id()}")
    await ok(floor, table_id, OpenTable(table_id=table_id, config=table_config(**config)))
    for seat, who in enumerate((ann, bob)):
        await ok(who, table_id, SitDown(seat=seat, player=who.client.name))
        await ok(cashier, table_id, BuyIn(seat=seat, amount=1000, player=who.client.name))
    return floor, ann, bob


# ------------------------------------------------------------------ the domain's powers, over the wire


def test_a_player_may_give_commands_only_for_his_own_seat(connect_as: Any, store: PostgresEventStore) -> None:
    async def scenario(r: Room) -> None:
        table_id = f"seat{_id()}"
        _, ann, bob = await two_players(r, table_id)
        table = r.table(table_id)
        assert table.hand is not None and table.hand.to_act is not None      # dealt by itself
        ann_seat, bob_seat = 0, 1
        before = r.stored(table_id)
        for command in (Act(seat=ann_seat, action="bring_in"), Act(seat=ann_seat, action="fold"),
                        Show(seat=ann_seat), Muck(seat=ann_seat), SitOut(seat=ann_seat),
                        Leave(seat=ann_seat), PostAnte(seat=ann_seat), SkipAnte(seat=ann_seat),
                        BuyIn(seat=ann_seat, amount=100), BuyIn(seat=bob_seat, amount=100),
                        SitDown(seat=5, player=ann.client.name), OpenTable(table_id=table_id, config=table_config())):
            assert await refused(bob, table_id, command) == FORBIDDEN, command
        assert r.stored(table_id) == before

    in_room(connect_as, store, scenario)


def test_R32_nobody_may_start_a_hand_with_a_seed_or_deck_of_his_choosing(
        connect_as: Any, store: PostgresEventStore) -> None:
    """Between hands (the service pauses before starting the next), a player's or an
    operator's StartHand is refused; on a live-dealer table an operator may start a
    hand, but not with a seed or a deck."""

    async def scenario(r: Room) -> None:
        online = f"seed{_id()}"
        floor, ann, _ = await two_players(r, online)
        assert r.table(online).hand is None and r.table(online).pause_turn is not None   # in the pause
        before = r.stored(online)
        for who in (ann, floor):
            for command in (StartHand(seed="ab" * 32), StartHand(deck=["As", "Ks"] * 26), StartHand()):
                assert await refused(who, online, command) == FORBIDDEN, (who.client.name, command)
        assert r.stored(online) == before
        live = f"live{_id()}"
        floor, ann, _ = await two_players(r, live, auto_deal=False)
        before = r.stored(live)
        assert await refused(floor, live, StartHand(seed="ab" * 32)) == FORBIDDEN
        assert await refused(ann, live, StartHand()) == FORBIDDEN
        assert r.stored(live) == before
        await ok(floor, live, StartHand())                  # R28: the live dealer's console
        assert r.table(live).hand is not None

    in_room(connect_as, store, scenario, pause_ms=60_000)


def test_R20_only_the_timer_service_times_out_a_turn(connect_as: Any, store: PostgresEventStore) -> None:
    async def scenario(r: Room) -> None:
        table_id = f"tmo{_id()}"
        floor, ann, bob = await two_players(r, table_id)
        table = r.table(table_id)
        assert table.hand is not None
        before = r.stored(table_id)
        to_act = table.hand.to_act
        for who in (ann, bob, floor):
            assert await refused(who, table_id, Timeout(turn=table.turn, seat=to_act)) == FORBIDDEN
        assert r.stored(table_id) == before
        timer = await r.identity("service", "timer")
        await ok(timer, table_id, Timeout(turn=table.turn, seat=to_act))
        assert r.stored(table_id) > before

    in_room(connect_as, store, scenario)


def test_R18_the_deadline_comes_from_the_services_clock_not_the_body(
        connect_as: Any, store: PostgresEventStore) -> None:
    async def scenario(r: Room) -> None:
        table_id = f"clock{_id()}"
        _, ann, bob = await two_players(r, table_id)
        table = r.table(table_id)
        assert table.hand is not None and table.hand.to_act is not None
        who = (ann, bob)[table.hand.to_act]
        sent_at = time.time_ns() // 1_000_000
        await ok(who, table_id, Act(seat=table.hand.to_act, action="bring_in", now_ms=1))
        turn = [e for e in r.store.load(table_id) if isinstance(e, TurnStarted)][-1]
        seconds = table.config.action_seconds * 1000  # type: ignore[union-attr]
        assert sent_at + seconds <= turn.deadline_ms <= time.time_ns() // 1_000_000 + seconds

    in_room(connect_as, store, scenario)


def test_a_replayed_command_id_is_refused_after_1101_other_commands(
        connect_as: Any, store: PostgresEventStore) -> None:
    """No window: each sender's ids only grow, for the life of the table."""

    async def scenario(r: Room) -> None:
        table_id = f"replay{_id()}"
        floor = await r.identity("operator", "floor")
        ann = await r.identity("player", f"ann{_id()}")
        await ok(floor, table_id, OpenTable(table_id=table_id, config=table_config()))
        await ok(ann, table_id, SitDown(seat=0, player=ann.client.name))
        first = SitOut(seat=0, sitting_out=True, command_id=ann.client.ids.next())
        await ok(ann, table_id, first)
        for k in range(1101):                               # carried out, each stored with its id
            await ok(ann, table_id, SitOut(seat=0, sitting_out=k % 2 == 1))
        assert r.table(table_id).seats[0].sitting_out is False   # the first one would change it again
        before = r.stored(table_id)
        assert await refused(ann, table_id, first) == DUPLICATE_COMMAND
        msg = await ann.nc.request(ann.client.subject(table_id), protocol.encode_command(first), timeout=5)
        assert protocol.decode_reply(msg.data).error.code == DUPLICATE_COMMAND
        assert r.stored(table_id) == before

    in_room(connect_as, store, scenario)


# ------------------------------------------------------------------ at the door


def test_garbled_oversized_and_1_mb_bodies_are_bad_requests_and_store_nothing(
        connect_as: Any, store: PostgresEventStore) -> None:
    async def scenario(r: Room) -> None:
        table_id = f"door{_id()}"
        _, ann, _ = await two_players(r, table_id)
        before = r.stored(table_id)
        act = b'{"type": "Act", "seat": 0, "action": "call", "command_id": "%s"}'
        for body in (b"\x00garbage", b'{"type": "Act", "seat": 0}', act % (b" " * 9000)):
            msg = await ann.nc.request(ann.client.subject(table_id), body, timeout=10)
            reply = protocol.decode_reply(msg.data)
            assert reply.error is not None and reply.error.code == protocol.BAD_REQUEST, body[:60]
        # 1 MB is above a player's payload limit (auth/terms.py): the server closes his
        # connection and the body reaches nobody.
        with pytest.raises(nats.errors.Error):
            await ann.nc.request(ann.client.subject(table_id), act % (b"9" * 1_000_000), timeout=2)
        assert ann.nc.is_closed
        assert r.stored(table_id) == before

    in_room(connect_as, store, scenario)


# ------------------------------------------------------------------ what the server refuses


def test_a_player_cannot_publish_as_anyone_else(connect_as: Any, store: PostgresEventStore) -> None:
    """Another player's command subject, another identity's partition subject, a role
    not his, a forged event: the server refuses each, so the service never sees it."""

    async def scenario(r: Room) -> None:
        table_id = f"spoof{_id()}"
        _, ann, bob = await two_players(r, table_id)
        before = r.stored(table_id)
        body = protocol.encode_command(Leave(seat=1, command_id=ann.client.ids.next()))
        p = partition_of(table_id)
        for subject in (subjects.command_from("player", bob.client.name, table_id),
                        f"studroom.pcmd.{p}.{table_id}.player.{bob.client.name}",
                        f"studroom.pcmd.{p}.{table_id}.operator.{ann.client.name}",
                        subjects.command_from("operator", ann.client.name, table_id),
                        subjects.command_from("service", "timer", table_id),
                        subjects.public_message(table_id, event_messages.PLAIN)):
            error = await ann.refused_by_server(ann.nc.publish(subject, body))
            assert "permissions violation" in error, (subject, error)
        assert r.stored(table_id) == before
        assert not r.table(table_id).seats[1].leaving

    in_room(connect_as, store, scenario)


def test_R33_a_player_reads_neither_another_players_private_subject_nor_his_inbox(
        connect_as: Any, store: PostgresEventStore) -> None:
    async def scenario(r: Room) -> None:
        ann = await r.identity("player", f"ann{_id()}")
        bob = await r.identity("player", f"bob{_id()}")
        relay = await r.identity("service", "relay")
        got: list[str] = []

        async def seen(msg: Any) -> None:
            got.append(msg.subject)

        for subject in (subjects.player_private_events(bob.client.name),
                        subjects.inbox_prefix("player", bob.client.name) + ".>",
                        subjects.all_private_events()):
            error = await ann.refused_by_server(ann.nc.subscribe(subject, cb=seen))
            assert "permissions violation" in error and "subscription" in error, error
        for api in ("STREAM.MSG.GET", "DIRECT.GET", "CONSUMER.CREATE"):      # nor the private stream
            subject = f"$JS.API.{api}.{subjects.PRIVATE_STREAM}"
            error = await ann.refused_by_server(ann.nc.publish(subject, b"{}"))
            assert "permissions violation" in error, error
        await ann.nc.subscribe(subjects.player_private_events(ann.client.name), cb=seen)   # his own
        await ann.nc.flush()
        await relay.nc.publish(subjects.private_events(bob.client.name, "t1"), b"bob's cards")
        await relay.nc.publish(subjects.private_events(ann.client.name, "t1"), b"ann's cards")
        await relay.nc.flush()
        for _ in range(100):                # his own copy arrives (a slow machine: seconds) ...
            if got:
                break
            await asyncio.sleep(0.05)
        await ann.nc.flush()                # ... and bob's, published first, would have before it
        assert got == [subjects.private_events(ann.client.name, "t1")]

    in_room(connect_as, store, scenario)


def test_a_spectator_reads_public_events_only_and_sends_nothing(
        connect_as: Any, store: PostgresEventStore) -> None:
    async def scenario(r: Room) -> None:
        table_id = f"watch{_id()}"
        spectator = await r.identity("spectator", "public")
        relay = await r.identity("service", "relay")
        got: list[bytes] = []

        async def seen(msg: Any) -> None:
            got.append(msg.data)

        await spectator.nc.subscribe(subjects.all_public_events(), cb=seen)
        for subject in (subjects.all_private_events(), ">", "_INBOX.>", f"{subjects.PREFIX}.pcmd.>"):
            error = await spectator.refused_by_server(spectator.nc.subscribe(subject, cb=seen))
            assert "permissions violation" in error, (subject, error)
        body = protocol.encode_command(OpenTable(table_id=table_id, config=table_config()))
        for subject in (subjects.command_from("player", "public", table_id),
                        subjects.command_from("operator", "public", table_id),
                        subjects.public_message(table_id, event_messages.PLAIN)):
            error = await spectator.refused_by_server(spectator.nc.publish(subject, body))
            assert "permissions violation" in error, (subject, error)
        await relay.nc.publish(subjects.public_message(table_id, event_messages.PLAIN), b"a public event")
        await relay.nc.flush()
        for _ in range(50):
            if got:
                break
            await asyncio.sleep(0.02)
        assert got == [b"a public event"]
        assert r.stored(table_id) == 0

    in_room(connect_as, store, scenario)


def test_a_connection_without_credentials_is_refused(secure_nats_url: str) -> None:
    async def quiet(error: Exception) -> None:
        """nats-py logs a refused connection loudly; the test asserts it instead."""

    async def anonymous() -> None:
        await nats.connect(secure_nats_url, allow_reconnect=False, max_reconnect_attempts=0,
                           connect_timeout=2, error_cb=quiet)

    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        asyncio.run(anonymous())


# ------------------------------------------------------------------ a reconnecting player


def test_R33_a_reconnecting_player_gets_his_table_with_his_own_down_cards(
        connect_as: Any, store: PostgresEventStore) -> None:
    async def scenario(r: Room) -> None:
        table_id = f"view{_id()}"
        floor, ann, bob = await two_players(r, table_id)
        table = r.table(table_id)
        assert table.hand is not None
        for seat, who in enumerate((ann, bob)):
            view = await who.client.view(table_id)
            assert view.seat == seat and view.version == table.version and view.turn == table.last_turn
            text = msgspec.json.encode(view).decode()
            for p in table.hand.players.values():
                for card, up in zip(p.cards, p.up):
                    shown = f'"{show(card)}"' in text
                    assert shown == (up or p.seat == seat), (seat, p.seat, card)
        operator_view = await floor.client.view(table_id)
        assert operator_view.seat is None
        assert all(c.card is None for p in operator_view.hand.players for c in p.cards if not c.up)  # type: ignore[union-attr]

    in_room(connect_as, store, scenario)

