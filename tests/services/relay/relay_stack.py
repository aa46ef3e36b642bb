"""What the relay's integration tests share (their fixtures, a fresh database with the
stores of SCHEMAS, are in conftest.py): tables written as a table service would write
them, a monitor of the streams and the audit of the streams against the stores (every
event exactly once on its table's public subject, in version order, as its public view;
every player's private subject carries exactly his own copies, in order; no other
message; and the secrecy check, tests/secrecy.py, finds no leak in any public message).
"""

from __future__ import annotations

import asyncio
import collections
import random
import threading
import time
from pathlib import Path
from typing import Any, Self

import msgspec
import nats
from nats.js import api
from secrecy import Message, Truth, scan
from studroom.domain import simulate, views
from studroom.domain.commands import BuyIn, Leave, OpenTable, SitDown
from studroom.domain.config import TableConfig
from studroom.domain.events import (
    CardsDealt, Event, HandMucked, HandStarted, PlayerLeft, PlayerSatDown, TableEvent,
)
from studroom.domain.table import Table
from studroom.services.relay.bootstrap import serve_relay
from studroom.services.relay.config import RelayConfig
from studroom.services.relay.relay import Relay
from studroom.services.runtime.processes import process
from studroom.services.runtime.settings import Settings
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.wire import event_messages, subjects

SCHEMAS = ["studroom_p0", "studroom_p1"]
decode_event = msgspec.json.Decoder(TableEvent).decode
encode = msgspec.json.encode


# ------------------------------------------------------------------------ the tables


def table_commits(table_id: str, game: str, players: int, hands: int, rng: random.Random) -> list[list]:
    """A table's events, one list per commit; players leave and newcomers take their
    seats, so seat -> player changes over time."""
    table = Table()
    config = TableConfig(game=game, stakes=simulate.STAKES)
    commits = [table.execute(OpenTable(table_id=table_id, config=config))]
    for seat in range(players):
        commits.append(table.execute(SitDown(seat=seat, player=f"{table_id}-p{seat}"))
                       + table.execute(BuyIn(seat=seat, amount=2000)))
    for hand in range(hands):
        if rng.random() < 0.15:
            seat = rng.choice(sorted(table.seats))
            commits.append(table.execute(Leave(seat=seat)))
            commits.append(table.execute(SitDown(seat=seat, player=f"{table_id}-n{hand}"))
                           + table.execute(BuyIn(seat=seat, amount=2000)))
        commits.append(simulate.play_hand(table, rng, timeout_rate=0.05))
        if more := simulate.top_up(table, 2000):
            commits.append(more)
    return commits


def renamed(events: list[Event], old: str, new: str) -> list[Event]:
    """The events with player ``old`` called ``new`` (as a store written before the
    door checked names may hold them)."""
    replace = msgspec.structs.replace
    out: list[Event] = []
    for e in events:
        if isinstance(e, (PlayerSatDown, PlayerLeft)) and e.player == old:
            e = replace(e, player=new)
        elif isinstance(e, HandStarted):
            e = replace(e, seats=[replace(s, player=new) if s.player == old else s for s in e.seats])
        out.append(e)
    return out


GAMES = [("seven_card_stud", 8), ("seven_card_stud_hilo", 5), ("five_card_stud", 6), ("seven_card_stud", 3)]


class Writer:
    """Tables of both stores, their commits interleaved as a table service would
    write them; ``write(n)`` appends the next n commits (None: all)."""

    def __init__(self, stores: dict[str, PostgresEventStore], tables_per_store: int, hands: int, seed: int):
        rng = random.Random(seed)
        self.stores = stores
        self.queue: list[tuple[str, str, list]] = []
        per_table: dict[tuple[str, str], list[list]] = {}
        for schema in stores:
            for i in range(tables_per_store):
                game, players = GAMES[i % len(GAMES)]
                table_id = f"{schema[-2:]}t{i}"
                per_table[(schema, table_id)] = table_commits(table_id, game, players, hands, rng)
        self.tables = {schema: [t for s, t in per_table if s == schema] for schema in stores}
        while per_table:
            key = rng.choice(list(per_table))
            self.queue.append((*key, per_table[key].pop(0)))
            if not per_table[key]:
                del per_table[key]
        self.queue.reverse()
        self.versions: dict[str, int] = collections.Counter()
        self.total = sum(len(events) for _, _, events in self.queue)
        self.written = 0
        self.appends = 0    # transactions (one per store a write touched)

    def write(self, commits: int | None = None, group: int = 20) -> int:
        """Append commits, several per transaction (as the table service batches)."""
        done = 0
        while self.queue and (commits is None or done < commits):
            batches: dict[str, list] = collections.defaultdict(list)
            for _ in range(group):
                if not self.queue or (commits is not None and done >= commits):
                    break
                schema, table_id, events = self.queue.pop()
                batches[schema].append((table_id, self.versions[table_id], events))
                self.versions[table_id] += len(events)
                self.written += len(events)
                done += 1
            for schema, batch in batches.items():
                self.stores[schema].append(batch)
                self.appends += 1
        return done

    def write_in_background(self, pace: float = 0.002) -> threading.Thread:
        def run() -> None:
            while self.write(5):
                time.sleep(pace)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


# --------------------------------------------------------------------------- audits


async def fetch_all(js: Any, stream: str, subject: str) -> list[Any]:
    info = await js.stream_info(stream)
    total = info.state.messages
    if not total:
        return []
    sub = await js.pull_subscribe(
        subject, stream=stream,
        config=api.ConsumerConfig(ack_policy=api.AckPolicy.NONE, mem_storage=True, inactive_threshold=30),
    )
    messages: list[Any] = []
    while len(messages) < total:
        messages += await sub.fetch(min(1000, total - len(messages)), timeout=10)
    await sub.unsubscribe()
    return messages


async def public_events(js: Any) -> list[tuple[str, int]]:
    """(table, version) of every event the public stream holds, in stream order."""
    return [(m.subject.split(".")[2], version) for m in await fetch_all(js, subjects.PUBLIC_STREAM,
                                                                        subjects.all_public_events())
            for version, _ in parts_of(m)]


async def audit(nats_url: str, stores: dict[str, PostgresEventStore], writer: Writer) -> dict[str, int]:
    """The streams hold exactly the views of the stores' events (see the module doc)."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        public = await fetch_all(js, subjects.PUBLIC_STREAM, subjects.all_public_events())
        private = await fetch_all(js, subjects.PRIVATE_STREAM, subjects.all_private_events())
    finally:
        await nc.close()

    expected_public: dict[str, list[tuple[str, bytes]]] = {}
    expected_private: dict[str, list[tuple[str, bytes]]] = collections.defaultdict(list)
    owner_cards: dict[str, set[str]] = collections.defaultdict(set)   # subject -> his cards
    truth = Truth()
    total = 0
    for schema, store in stores.items():
        for table_id in writer.tables[schema]:
            events = store.load(table_id)
            truth.learn_stored(table_id, events)
            total += len(events)
            expected_public[table_id] = [
                (str(v), encode(views.public(e))) for v, e in enumerate(events, start=1)
            ]
            players: dict[int, str] = {}
            for version, event in enumerate(events, start=1):
                if isinstance(event, HandStarted):
                    players = {s.seat: s.player for s in event.seats}
                for seat in views.owners_of_private_cards(event):
                    subject = subjects.private_events(players[seat], table_id)
                    expected_private[subject].append((str(version), encode(views.private(event, seat))))
                    if isinstance(event, CardsDealt):     # (else a muck, to the showdown's players: R23)
                        owner_cards[subject] |= {d.card for d in event.cards if d.seat == seat and not d.up}
    assert total == writer.written
    public_events = [(m.subject.split(".")[2], version, part) for m in public for version, part in parts_of(m)]
    private_events = [(m, version, part) for m in private for version, part in parts_of(m)]
    secrecy = scan([Message(table_id, version, part) for table_id, version, part in public_events]
                   + [Message(m.subject.rsplit(".", 1)[-1], version, part, m.subject.split(".")[2])
                      for m, version, part in private_events], truth)
    assert not secrecy.leaks and secrecy.hands, str(secrecy)

    ids = [m.headers["Nats-Msg-Id"] for m in public + private]
    duplicated = [i for i, n in collections.Counter(ids).items() if n > 1]
    assert not duplicated, f"{len(duplicated)} messages twice, e.g. {duplicated[:5]}"

    got_public: dict[str, list[tuple[str, bytes]]] = collections.defaultdict(list)
    for m in public:   # in stream order, each on studroom.pub.<table>.<the mark of its types>
        table_id = m.subject.split(".")[2]
        types = m.headers["Studroom-Events"].split(",")
        assert m.subject == subjects.public_message(table_id, event_messages.mark_of(types))
        parts = parts_of(m)
        assert [type(e).__name__ for e in event_messages.decode_events(m.data)] == types
        got_public[table_id] += [(str(version), part) for version, part in parts]
    assert sum(len(got) for got in got_public.values()) == total
    assert got_public.keys() == expected_public.keys()
    for table_id, wanted in expected_public.items():
        got = got_public[table_id]
        assert [v for v, _ in got] == [v for v, _ in wanted], f"{table_id}: not every event once, in order"
        assert got == wanted

    got_private: dict[str, list[tuple[str, bytes]]] = collections.defaultdict(list)
    for m, version, part in private_events:
        got_private[m.subject].append((str(version), part))
        copy = decode_event(part)
        if isinstance(copy, HandMucked):                  # R23: to a participant of its showdown
            continue
        assert isinstance(copy, CardsDealt)
        shown = {d.card for d in copy.cards if not d.up and d.card is not None}
        assert shown and shown <= owner_cards[m.subject], f"{m.subject} got someone else's card"
    assert got_private == expected_private
    return {"public": len(public), "private": len(private), "public_events": total}


_raw_list = msgspec.json.Decoder(list[msgspec.Raw])


def parts_of(m: Any) -> list[tuple[int, bytes]]:
    """A relay message's events as (version, their JSON exactly as sent)."""
    parts = [bytes(raw) for raw in _raw_list.decode(m.data)]
    first = event_messages.first_version(m.headers, len(parts))
    return list(zip(range(first, first + len(parts)), parts))


class Monitor:
    """One connection of the test's own to watch the streams (it reconnects after
    the server was killed), as the identity in ``creds`` on a secure server; it
    counts the public events it hears unless ``counting`` is off (an identity that
    may not read them)."""

    def __init__(self, url: str, creds: Path | None = None, counting: bool = True) -> None:
        self.url = url
        self.creds = creds
        self.counting = counting

    async def __aenter__(self) -> Self:
        self.nc = await process.connect(self.url, "relay-test-monitor", creds=self.creds, reconnect_time_wait=0.1)
        self.js = self.nc.jetstream(timeout=2)
        self.events = 0
        if self.counting:
            await self.nc.subscribe(subjects.all_public_events(), cb=self._on_public)
            await self.nc.flush()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.nc.close()

    async def _on_public(self, msg: Any) -> None:
        self.events += len(msg.headers[subjects.EVENTS_HEADER].split(","))

    async def wait_public(self, at_least: int, timeout: float = 30) -> int:
        """Until the public messages heard hold ``at_least`` events (those published
        while this connection was away are not counted: a fraction of a backlog is a
        point in time, not an audit)."""
        deadline = time.monotonic() + timeout
        while self.events < at_least:
            assert time.monotonic() < deadline, f"only {self.events} of {at_least} public events"
            await asyncio.sleep(0.01)
        return self.events

    async def positions(self) -> dict[str, int]:
        kv = await self.js.key_value(subjects.RELAY_BUCKET)
        return {schema: msgspec.json.decode((await kv.get(schema)).value)["position"] for schema in SCHEMAS}

    async def wait_caught_up(self, stores: dict[str, PostgresEventStore], timeout: float = 60) -> None:
        """Until the relay's position records reach the end of every store."""
        deadline = time.monotonic() + timeout
        while True:
            ends = {schema: store.max_notification_id() for schema, store in stores.items()}
            try:
                if await self.positions() == ends:
                    return
            except (TimeoutError, nats.errors.Error):
                pass
            assert time.monotonic() < deadline, "the relay did not catch up"
            await asyncio.sleep(0.02)


def start_relay(nats_url: str, database: str, config: RelayConfig, stop: asyncio.Event,
                creds: Path | None = None) -> tuple[asyncio.Task, list[Relay]]:
    """``serve_relay`` of SCHEMAS as a task (``creds``: the relay's, on a secure server)."""
    settings = Settings(nats_url=nats_url, database_url=database, nats_creds=creds)
    ready: list[Relay] = []
    task = asyncio.create_task(
        serve_relay(settings, store_schemas=SCHEMAS, stop=stop, config=config, on_ready=ready.append)
    )
    return task, ready
