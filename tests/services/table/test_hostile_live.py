"""Hostile requests against the LIVE endpoint (hypothesis): a table service and a relay
on a NATS server in operator mode, as the room runs them, and PostgreSQL.

A player (``mal``, in a hand with bob, who does nothing meanwhile) and an operator
(``floor``) each send what a hostile client would: reply subjects not their own inbox
(sent first: neither answered nor carried out), random bytes, truncated JSON, wrong
types, unknown fields, huge numbers, negative and other seats, other players' names,
replayed, garbled and huge command ids, other roles' commands (StartHand with a seed or
a deck, Timeout, BuyIn, OpenTable), ViewTable of other tables.  Each request gets the
answer its twin gets from the same rules in-process (a ``CommandHandler`` on a copy of
the table in memory): carried out when legal (its events stored under the sender's id),
else refused with a clear code and nothing stored.  Afterwards the service has had no
internal error, the table plays a normal hand, and the relay has published every
stored event of every table touched (no stall), with no secret in it (tests/secrecy.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import random
import threading
import uuid
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from psycopg import sql
from secrecy import Watch, watching
from studroom.domain import errors
from studroom.domain.authority import Sender
from studroom.domain.cards import ALL_CARDS, show
from studroom.domain.commands import (
    COMMAND_TYPES,
    BuyIn,
    Command,
    OpenTable,
    PostAnte,
    ResumeTable,
    Show,
    SitDown,
    SitOut,
)
from studroom.domain.errors import MUST_SHOW
from studroom.domain.events import (
    Event,
    HandEnded,
    HandShown,
    HandStarted,
    TableEvent,
    TableOpened,
)
from studroom.domain.simulate import choose
from studroom.domain.table import Table
from studroom.services.auth import terms
from studroom.services.auth.authority import Authority
from studroom.services.client.table import TableClient
from studroom.services.relay.bootstrap import serve_relay
from studroom.services.runtime.settings import Settings
from studroom.services.store.codec import register_event_types
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.table.command_handling import CommandHandler
from studroom.services.table.service import TableService
from studroom.services.wire import protocol
from studroom.services.wire.protocol import MAX_REQUEST_BYTES, ViewTable
from table_driver import table_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

register_event_types(TableEvent)

T = TypeVar("T")
RUN = uuid.uuid4().hex[:6]
TABLE = f"hostile{RUN}"                 # mal and bob in a hand, ann waiting for the next
OTHER = f"other{RUN}"                   # ann and bob in a hand; mal not seated
NEW = [f"new{RUN}{i}" for i in range(3)]   # unopened (the operator may open them)
PLAYERS = ("ann", "bob", "mal")

# Every code a refusal may carry: the domain's and the service's own, but none that
# says the service failed (internal, unavailable, conflict).
CLEAR_CODES = frozenset(v for k, v in vars(errors).items() if k.isupper() and isinstance(v, str)) | {
    protocol.BAD_REQUEST, protocol.UNKNOWN_TABLE}


# ------------------------------------------------------------------ hostile requests


class Marker(str):
    """A command id decided when the request is sent: the sender's next id, or one he
    has already used."""


FRESH, REPLAYED = Marker("fresh"), Marker("replayed")
HUGE = st.sampled_from([2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63), -(2**64), -1])
INTS = st.integers(-3, 12) | HUGE
SEATS = st.one_of(st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, 2]), INTS)   # mostly the seats in play
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
JUNK = st.one_of(st.none(), st.booleans(), INTS, st.floats(allow_nan=False, allow_infinity=False), TEXT,
                 st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(TEXT, st.integers(), max_size=2))
CARDS = st.sampled_from([show(c) for c in ALL_CARDS] + ["Zz", "", "10h"])
NAMES = st.sampled_from(PLAYERS) | st.sampled_from(["floor", "timer", "Zoë", "", "a.b", "x" * 65]) | TEXT
COMMAND_IDS = st.one_of(
    st.just(FRESH), st.just(REPLAYED), st.none(),
    st.sampled_from(["", "0", "01", "-5", "1.5", "1e5", " 1", "abc", "9" * 19, "9" * 25, str(2**63), "\u0661"]),
    st.integers(-(2**70), 2**70), st.integers(1, 2**62).map(str), TEXT,
)


def _config_values() -> st.SearchStrategy[dict[str, Any]]:
    """A table's settings as JSON, each value kept or made hostile."""

    def mutated(value: Any) -> st.SearchStrategy[Any]:
        if isinstance(value, dict):
            return st.fixed_dictionaries({k: mutated(v) for k, v in value.items()})
        if isinstance(value, bool):
            return st.booleans() | JUNK
        if isinstance(value, int) or value is None:
            return st.just(value) | INTS | st.integers(0, 10**15) | JUNK
        return st.just(value) | TEXT | JUNK

    return mutated(msgspec.to_builtins(table_config(max_buy_in=4000)))


VALUES: dict[str, st.SearchStrategy[Any]] = {
    "seat": SEATS, "button": st.none() | SEATS, "exposed": st.lists(SEATS, max_size=3),
    "amount": INTS | st.integers(300, 4000) | st.integers(1, 10**13), "turn": INTS | st.integers(0, 10**6),
    "player": NAMES,
    "action": st.sampled_from(["bring_in", "complete", "fold", "check", "call", "bet", "raise", "all_in", ""]),
    "size": st.sampled_from([None, "small", "big", "huge"]),
    "seed": st.none() | st.sampled_from(["ab" * 32, "", "zz"]) | st.binary(min_size=32, max_size=32).map(bytes.hex),
    "deck": st.none() | st.lists(CARDS, max_size=60), "cards": st.none() | st.lists(CARDS, max_size=12),
    "mixed": st.booleans(), "sitting_out": st.booleans(), "auto_ante": st.booleans(),
    "now_ms": INTS, "config": _config_values(),
}
KINDS = [*COMMAND_TYPES, ViewTable]
# Bodies no honest client sends: over the size limit, a command id as long as the
# server lets a player publish (a 1 MB one closes his connection: auth/terms.py).
BIG_BODIES = [b'{"type": "Act"' + b" " * MAX_REQUEST_BYTES + b"}",
              b'{"type": "Leave", "seat": 2, "command_id": "%s"}' % (b"9" * (terms.of("player").payload - 100))]


@dataclass(frozen=True)
class Request:
    """A request for ``table``: JSON ``fields`` (cut after ``cut`` bytes), or ``raw`` bytes."""

    table: str
    fields: dict[str, Any] | None = None
    cut: int | None = None
    raw: bytes = b""
    reply: str | None = None        # sent first with this reply subject: no answer, nothing done


# Reply subjects not the sender's own inbox (issue 16): the service must neither answer
# nor carry out the request.
HOSTILE_REPLIES = st.sampled_from([
    "$KV.studroom_leases.p.0", f"$KV.studroom_lobby.{TABLE}", "$JS.API.STREAM.DELETE.STUDROOM_PUBLIC",
    "_INBOX.player.bob.x1", "_INBOX.player.malx.1", "_INBOX.operator.floorx.1", "_INBOX.service.table.1",
    f"studroom.svc.{TABLE}.timer", "studroom.relay.nudge.x", "studroom.pub.x",
]) | st.from_regex(r"\A[A-Za-z$_][A-Za-z0-9_.$-]{0,40}\Z").filter(
    lambda s: not s.startswith("_INBOX.") and ".." not in s and not s.endswith("."))


@st.composite
def requests(draw: st.DrawFn) -> Request:
    request = draw(_requests())
    reply = draw(st.none() | st.none() | HOSTILE_REPLIES)
    return request if reply is None else dataclasses.replace(request, reply=reply)


@st.composite
def _requests(draw: st.DrawFn) -> Request:
    table = draw(st.sampled_from([TABLE, TABLE, TABLE, OTHER, *NEW]))
    shape = draw(st.sampled_from(["command"] * 6 + ["mutated", "cut", "bytes", "big"]))
    if shape == "bytes":
        return Request(table, raw=draw(st.binary(max_size=300)))
    if shape == "big":
        return Request(table, raw=draw(st.sampled_from(BIG_BODIES)))
    kind = draw(st.sampled_from(KINDS))
    fields: dict[str, Any] = {"type": kind.__struct_config__.tag}
    for f in msgspec.inspect.type_info(kind).fields:  # type: ignore[attr-defined]
        if f.name == "command_id":            # most commands are numbered as a client does
            fields[f.name] = draw(st.sampled_from([FRESH, FRESH, None])) or draw(COMMAND_IDS)
        elif f.required or draw(st.booleans()):
            named = st.just(table) | NAMES if f.name == "table_id" else VALUES.get(f.name, JUNK)
            fields[f.name] = draw(named)
    if shape == "mutated":
        name = draw(st.sampled_from(sorted(fields)))
        how = draw(st.sampled_from(["drop", "retype", "unknown"]))
        if how == "drop":
            del fields[name]
        elif how == "retype":
            fields[name] = draw(JUNK)
        else:
            fields[draw(TEXT.filter(lambda k: k not in fields))] = draw(JUNK)
    cut = draw(st.integers(0, 200)) if shape == "cut" else None
    return Request(table, fields, cut)


# The attacks of issue 9, tried in every run before the random ones.
ATTACKS = [
    Request(OTHER, {"type": "ViewTable"}),
    Request(NEW[0], {"type": "ViewTable"}),
    Request(TABLE, {"type": "StartHand", "seed": "ab" * 32, "command_id": FRESH}),
    Request(TABLE, {"type": "StartHand", "deck": [show(c) for c in ALL_CARDS], "command_id": FRESH}),
    Request(TABLE, {"type": "Timeout", "turn": 1, "command_id": FRESH}),
    Request(TABLE, {"type": "BuyIn", "seat": 2, "amount": 2**64, "command_id": FRESH}),
    Request(TABLE, {"type": "BuyIn", "seat": 2, "amount": 500, "command_id": FRESH}),
    Request(TABLE, {"type": "SitDown", "seat": 5, "player": "Zoë", "command_id": FRESH}),
    Request(TABLE, {"type": "SitDown", "seat": 6, "player": "ann", "command_id": FRESH}),
    Request(TABLE, {"type": "Act", "seat": -1, "action": "fold", "command_id": FRESH}),
    Request(TABLE, {"type": "Act", "seat": 0, "action": "fold", "command_id": FRESH}),
    Request(TABLE, {"type": "Act", "seat": 2, "action": "call", "now_ms": 1, "command_id": FRESH}),
    Request(TABLE, {"type": "SitOut", "seat": 2, "command_id": FRESH}),
    Request(TABLE, {"type": "SitOut", "seat": 2, "sitting_out": False, "command_id": REPLAYED}),
    Request(TABLE, {"type": "SitOut", "seat": 2, "sitting_out": False, "command_id": str(2**63)}),
    Request(TABLE, {"type": "SitOut", "seat": 2, "sitting_out": False, "command_id": FRESH}),
    Request(TABLE, raw=BIG_BODIES[1]),
    Request(TABLE, {"type": "SitOut", "seat": 2, "command_id": FRESH}, reply="$KV.studroom_leases.p.0"),
    Request(OTHER, {"type": "ViewTable"}, reply=f"$KV.studroom_lobby.{OTHER}"),
    Request(TABLE, {"type": "ViewTable"}, reply="$JS.API.STREAM.DELETE.STUDROOM_PUBLIC"),
    Request(TABLE, {"type": "ViewTable"}, reply="_INBOX.player.bob.x1"),
    Request(TABLE, {"type": "Leave", "seat": 2, "command_id": FRESH}, reply=f"studroom.svc.{TABLE}.timer"),
]


def with_the_attacks(test: Any) -> Any:
    for request in reversed(ATTACKS):
        test = example(request=request)(test)
    return test


# ------------------------------------------------------------------ the live room


@dataclass
class Identity:
    """An authenticated connection, its client, and the command ids it had carried out."""

    sender: Sender
    client: TableClient
    used: list[str] = field(default_factory=list)

    def body(self, request: Request) -> bytes:
        if request.fields is None:
            return request.raw
        fields = dict(request.fields)
        if fields.get("command_id") is FRESH:
            fields["command_id"] = self.client.ids.next()
        elif fields.get("command_id") is REPLAYED:
            fields["command_id"] = self.used[-1] if self.used else "1"
        data = json.dumps(fields, ensure_ascii=False).encode()
        return data if request.cut is None else data[: request.cut]

    def carried_out(self, body: bytes) -> str:
        """Note the id of a command carried out (so ``next`` goes on above it)."""
        command_id = json.loads(body)["command_id"]
        self.used.append(command_id)
        self.client.ids.last = max(self.client.ids.last, int(command_id))
        return command_id


class Live:
    """The room on an event loop of its own (hypothesis calls in from the test's thread)."""

    def __init__(self, connect_as: Any, authority: Authority, nats_url: str, database_url: str, schema: str):
        self.connect_as, self.authority, self.nats_url, self.database_url = connect_as, authority, nats_url, database_url
        self.schema = schema
        self.reader = PostgresEventStore(database_url, schema=schema, pool_size=1, max_overflow=1)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.exits = contextlib.AsyncExitStack()
        self.who: dict[str, Identity] = {}
        self.opened: set[str] = {TABLE, OTHER}

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def start(self) -> None:
        service_store = PostgresEventStore(self.database_url, schema=self.schema, pool_size=2, max_overflow=2)
        self.exits.callback(service_store.close)
        # no quota: this test is about the rules (the quotas: test_door_live.py)
        self.service = TableService(await self._connect("service", "table"), [service_store],
                                    instance_id=f"hostile-{RUN}", quotas={},
                                    door_nc=await self._connect("service", "table-door"))
        await self.service.start()
        self.exits.push_async_callback(self.service.close)
        stop = asyncio.Event()
        settings_ = Settings(nats_url=self.nats_url, database_url=self.database_url,
                             nats_creds=self.authority.ensure("service", "relay"))
        relay = asyncio.create_task(serve_relay(settings_, store_schemas=[self.schema], stop=stop))
        self.exits.push_async_callback(asyncio.wait_for, relay, 30)
        self.exits.callback(stop.set)
        self.watch: Watch = await self.exits.enter_async_context(watching(await self._connect("spectator", "public")))
        for role, name in [("operator", "floor"), ("service", "cashier"), *(("player", p) for p in PLAYERS)]:
            nc = await self._connect(role, name)
            self.who[name] = Identity(Sender(role, name), TableClient(nc, role, name))  # type: ignore[arg-type]
        for table_id, players in ((TABLE, PLAYERS), (OTHER, PLAYERS[:2])):
            await self.open_with(table_id, players)

    async def open_with(self, table_id: str, players: list[str]) -> None:
        """The floor opens ``table_id``; ``players`` sit down and buy in (the last two start a hand)."""
        self.opened.add(table_id)
        await self.ok("floor", table_id, OpenTable(table_id=table_id, config=table_config(max_buy_in=4000)))
        for seat, name in enumerate(players):
            await self.ok(name, table_id, SitDown(seat=seat, player=name))
        for seat in reversed(range(len(players))):
            await self.ok("cashier", table_id, BuyIn(seat=seat, amount=1000, player=players[seat]))

    async def _connect(self, role: str, name: str) -> Any:
        nc = await self.connect_as(role, name)
        self.exits.push_async_callback(nc.close)
        return nc

    async def ok(self, name: str, table_id: str, command: Command) -> None:
        reply = await self.who[name].client.send(table_id, command)
        assert reply.ok, (name, command, reply)

    async def request(self, name: str, table_id: str, body: bytes, hostile_reply: str | None) -> protocol.Reply:
        """The reply to ``body``, sent once before with ``hostile_reply`` (if any):
        that copy must be neither answered nor carried out."""
        nc, subject = self.who[name].client.nc, self.who[name].client.subject(table_id)
        if hostile_reply is not None:
            misdirected = self.service.door.stats.misdirected
            await nc.publish(subject, body, reply=hostile_reply)
            await nc.flush()
            for _ in range(200):
                if self.service.door.stats.misdirected > misdirected:
                    break
                await asyncio.sleep(0.01)
            assert self.service.door.stats.misdirected == misdirected + 1, hostile_reply
        msg = await nc.request(subject, body, timeout=10)
        return protocol.decode_reply(msg.data)

    def close(self) -> None:
        try:
            self.run(self.exits.aclose())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.reader.close()


@pytest.fixture(scope="module")
def live(connect_as: Any, authority: Authority, secure_nats_url: str, database_url: str) -> Iterator[Live]:
    schema = f"hostile_{RUN}_p0"
    room = Live(connect_as, authority, secure_nats_url, database_url, schema)
    room.thread.start()
    try:
        room.run(room.start())
        yield room
    finally:
        room.close()
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


# ------------------------------------------------------------------ the properties


def twin_reply(table_id: str, before: list[Event], body: bytes, sender: Sender) -> tuple[protocol.Reply, list[Event]]:
    """What the same rules answer in-process on a copy of the table: the reply and the
    events they would store."""
    twin = InMemoryEventStore()
    if before:
        twin.append([(table_id, 0, before)])
    reply = CommandHandler(twin).handle(table_id, body, by=sender)
    return reply, twin.load(table_id, after_version=len(before))


def outcome(reply: protocol.Reply) -> str:
    return "ok" if reply.ok else reply.error.code if reply.error is not None else "?"


def shown_seats(events: list[Event]) -> set[int]:
    """The seats whose cards were shown in the last hand of ``events``."""
    start = max((i for i, e in enumerate(events) if isinstance(e, HandStarted)), default=0)
    return {e.seat for e in events[start:] if isinstance(e, HandShown)}


def answer_hostile(live: Live, name: str, request: Request) -> None:
    who = live.who[name]
    before = live.reader.load(request.table)
    body = who.body(request)
    reply = live.run(live.request(name, request.table, body, request.reply))
    after = live.reader.load(request.table)
    expected, would_store = twin_reply(request.table, before, body, who.sender)
    assert after[: len(before)] == before, "stored history changed"
    new = after[len(before):]
    assert outcome(reply) == outcome(expected), (body[:200], reply, expected)
    assert [type(e) for e in new] == [type(e) for e in would_store], (body[:200], new)
    if not reply.ok:
        assert reply.error is not None and reply.error.code in CLEAR_CODES and len(reply.error.message) <= 300, reply
        return
    if reply.view is not None:
        assert reply.view == expected.view
        hidden_shown = {p.seat for p in reply.view.hand.players if p.seat != reply.view.seat
                        and any(c.card is not None and not c.up for c in p.cards)} if reply.view.hand else set()
        assert hidden_shown <= shown_seats(before), reply.view
        return
    command_id = who.carried_out(body)
    assert new and new[0].command_id == f"{who.sender.key}#{int(command_id)}", new[:1]
    if isinstance(new[0], TableOpened):
        live.opened.add(request.table)


HOSTILE = settings(max_examples=300, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


async def play_a_hand(live: Live, table_id: str, timeout: float = 30) -> None:
    """Seat ann and bob again where needed and answer every turn as its player, until
    a hand that starts from now has ended."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    first_new = Table.replay(live.reader.load(table_id)).hand_no + 1
    rng = random.Random(9)
    while True:
        assert loop.time() < deadline, "the table did not finish a hand"
        events = live.reader.load(table_id)
        if any(isinstance(e, HandEnded) and e.hand_no == first_new for e in events):
            return
        table = Table.replay(events)
        hand = table.hand
        if hand is None:
            await _seat_again(live, table_id, table)
        elif hand.turn_kind == "ante":
            seat = next(p.seat for p in hand.players.values() if not p.posted and not p.folded)
            await live.who[hand.players[seat].player].client.send(table_id, PostAnte(seat=seat))
        else:
            turn = table.last_turn
            assert turn is not None and turn.seat is not None
            client = live.who[hand.players[turn.seat].player].client
            reply = await client.send(table_id, choose(turn, rng))
            if reply.error is not None and reply.error.code == MUST_SHOW:
                await client.send(table_id, Show(seat=turn.seat))
        await asyncio.sleep(0)


async def _seat_again(live: Live, table_id: str, table: Table) -> None:
    """ann and bob seated, in, and with chips (the hostile operator may have removed them,
    or paused the table)."""
    assert table.config is not None
    if table.paused:
        await live.ok("floor", table_id, ResumeTable())
        return
    for name in PLAYERS[:2]:
        seat = next((s for s, st_ in table.seats.items() if st_.player == name), None)
        if seat is None:
            seat = min(set(range(table.config.seats)) - set(table.seats))
            await live.ok(name, table_id, SitDown(seat=seat, player=name))
            return
        state = table.seats[seat]
        if state.sitting_out:
            await live.ok(name, table_id, SitOut(seat=seat, sitting_out=False))
            return
        if state.stack == 0:
            await live.ok("cashier", table_id, BuyIn(seat=seat, amount=table.config.min_buy_in, player=state.player))
            return


def test_hostile_requests_to_the_live_table_service_get_clear_answers_and_change_nothing_they_may_not(
        live: Live) -> None:
    @HOSTILE
    @given(request=requests())
    @with_the_attacks
    def from_a_player(request: Request) -> None:
        answer_hostile(live, "mal", request)

    @HOSTILE
    @given(request=requests())
    @with_the_attacks
    def from_an_operator(request: Request) -> None:
        answer_hostile(live, "floor", request)

    from_a_player()
    from_an_operator()
    assert all(store["internal_errors"] == 0 for store in live.service.stats()["stores"])
    table_id = TABLE
    if Table.replay(live.reader.load(TABLE)).closed:     # closing it was the floor's right: a table of its own
        table_id = f"after{RUN}"
        live.run(live.open_with(table_id, PLAYERS[:2]))
    live.run(play_a_hand(live, table_id))
    report = live.run(live.watch.check(live.reader.load, tables=live.opened))
    assert report.hands >= 2
