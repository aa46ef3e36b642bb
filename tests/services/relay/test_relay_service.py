"""The relay against real servers: PostgreSQL event stores (schemas studroom_p0 and
studroom_p1 in a database of the test's own) and an embedded NATS with JetStream of
the test's own (some tests kill it).

Every test ends with the same audit of the streams against the stores: every event
exactly once on its table's public subject, in version order, as its public view;
every player's private subject carries exactly his own copies (his down cards), in
order; no other message.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit, urlunsplit

import msgspec
import nats
import psycopg
import pytest
from nats.js import api
from psycopg import sql
from studroom.domain import views
from studroom.domain.commands import BuyIn, Leave, OpenTable, SitDown
from studroom.domain.config import TableConfig
from studroom.domain.events import CardsDealt, HandStarted, TableEvent
from studroom.domain.table import Table
from studroom.domain import simulate
from studroom.services.wire import subjects
from studroom.services.runtime.settings import Settings
from studroom.services.runtime.embedded_nats import EmbeddedNats
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.relay.bootstrap import serve_relay
from studroom.services.relay.config import RelayConfig
from studroom.services.relay.relay import Relay

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SCHEMAS = ["studroom_p0", "studroom_p1"]
decode_event = msgspec.json.Decoder(TableEvent).decode
encode = msgspec.json.encode


# ------------------------------------------------------------------------- fixtures


@pytest.fixture
def nats_server(private_dir: Path) -> Iterator[EmbeddedNats]:
    """A NATS of this test's own: tests kill it, and the streams start empty."""
    with EmbeddedNats(private_dir, auth=False) as server:
        yield server


@pytest.fixture
def database(database_url: str) -> Iterator[str]:
    """A fresh database on the session's PostgreSQL (so schemas studroom_p0/p1 are new)."""
    name = f"relay_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    parts = urlsplit(database_url)
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def stores(database: str) -> Iterator[dict[str, PostgresEventStore]]:
    opened = {schema: PostgresEventStore(database, schema=schema) for schema in SCHEMAS}
    yield opened
    for store in opened.values():
        store.close()


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
    total = 0
    for schema, store in stores.items():
        for table_id in writer.tables[schema]:
            events = store.load(table_id)
            total += len(events)
            expected_public[subjects.public_events(table_id)] = [
                (str(v), encode(views.public(e))) for v, e in enumerate(events, start=1)
            ]
            players: dict[int, str] = {}
            for version, event in enumerate(events, start=1):
                if isinstance(event, HandStarted):
                    players = {s.seat: s.player for s in event.seats}
                for seat in views.owners_of_private_cards(event):
                    subject = subjects.private_events(players[seat], table_id)
                    expected_private[subject].append((str(version), encode(views.private(event, seat))))
                    assert isinstance(event, CardsDealt)
                    owner_cards[subject] |= {d.card for d in event.cards if d.seat == seat and not d.up}
    assert total == writer.written

    ids = [m.headers["Nats-Msg-Id"] for m in public + private]
    duplicated = [i for i, n in collections.Counter(ids).items() if n > 1]
    assert not duplicated, f"{len(duplicated)} messages twice, e.g. {duplicated[:5]}"

    got_public: dict[str, list[tuple[str, bytes]]] = collections.defaultdict(list)
    for m in public:   # in stream order
        got_public[m.subject].append((m.headers["Studroom-Version"], bytes(m.data)))
    assert len(public) == total
    assert got_public.keys() == expected_public.keys()
    for subject, wanted in expected_public.items():
        got = got_public[subject]
        assert [v for v, _ in got] == [v for v, _ in wanted], f"{subject}: not every event once, in order"
        assert got == wanted

    got_private: dict[str, list[tuple[str, bytes]]] = collections.defaultdict(list)
    for m in private:
        got_private[m.subject].append((m.headers["Studroom-Version"], bytes(m.data)))
        copy = decode_event(m.data)
        assert isinstance(copy, CardsDealt)
        shown = {d.card for d in copy.cards if not d.up and d.card is not None}
        assert shown and shown <= owner_cards[m.subject], f"{m.subject} got someone else's card"
    assert got_private == expected_private
    return {"public": len(public), "private": len(private)}


class Monitor:
    """One connection of the test's own to watch the streams (it reconnects after
    the server was killed)."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def __aenter__(self) -> Self:
        self.nc = await nats.connect(self.url, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
        self.js = self.nc.jetstream(timeout=2)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.nc.close()

    async def public_count(self) -> int:
        try:
            return (await self.js.stream_info(subjects.PUBLIC_STREAM)).state.messages
        except (TimeoutError, nats.errors.Error):
            return 0      # not created yet, or the server is down

    async def wait_public(self, at_least: int, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while (count := await self.public_count()) < at_least:
            assert time.monotonic() < deadline, f"only {count} of {at_least} public messages"
            await asyncio.sleep(0.01)
        return count

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


def start_relay(nats_url: str, database: str, config: RelayConfig, stop: asyncio.Event) -> tuple[asyncio.Task, list[Relay]]:
    settings = Settings(nats_url=nats_url, database_url=database)
    ready: list[Relay] = []
    task = asyncio.create_task(
        serve_relay(settings, store_schemas=SCHEMAS, stop=stop, config=config, on_ready=ready.append)
    )
    return task, ready


# ---------------------------------------------------------------------------- tests


def test_relay_publishes_every_event_once_in_order_with_private_copies(
    nats_server: EmbeddedNats, database: str, stores: dict[str, PostgresEventStore]
) -> None:
    writer = Writer(stores, tables_per_store=4, hands=20, seed=1)
    writer.write(len(writer.queue) // 2)          # a backlog, then live writes

    async def scenario() -> None:
        stop = asyncio.Event()
        # A long poll interval: live events must come through the nudge.
        config = RelayConfig(batch_size=300, poll_interval=5.0)
        task, ready = start_relay(nats_server.url, database, config, stop)
        async with Monitor(nats_server.url) as monitor:
            await monitor.wait_caught_up(stores)
            # Live: each commit is followed by a nudge; the relay publishes at once.
            arrived: asyncio.Queue[float] = asyncio.Queue()

            async def on_public(_msg: Any) -> None:
                arrived.put_nowait(time.perf_counter())

            await monitor.nc.subscribe(subjects.all_public_events(), cb=on_public)
            await monitor.nc.flush()
            latencies = []
            for _ in range(10):
                schema = writer.queue[-1][0]
                before = writer.written
                started = time.perf_counter()
                await asyncio.to_thread(writer.write, 1, 1)
                await monitor.nc.publish(subjects.relay_nudge(schema))
                latencies.append(await asyncio.wait_for(arrived.get(), 3) - started)
                for _ in range(writer.written - before - 1):
                    await asyncio.wait_for(arrived.get(), 3)
            assert sorted(latencies)[len(latencies) // 2] < 0.5, latencies
            await asyncio.to_thread(writer.write)    # the rest, in one go
            for schema in SCHEMAS:
                await monitor.nc.publish(subjects.relay_nudge(schema))
            await monitor.wait_caught_up(stores, timeout=4)   # < the poll interval
        stop.set()
        relay = await asyncio.wait_for(task, 20)
        assert relay is ready[0]
        counts = await audit(nats_server.url, stores, writer)
        stats = relay.stats()
        assert sum(s.events for s in stats.values()) == writer.written
        assert sum(s.messages for s in stats.values()) == counts["public"] + counts["private"]
        assert sum(s.duplicates + s.skipped for s in stats.values()) == 0

    asyncio.run(scenario())


def _relay_command(batch_size: int) -> list[str]:
    command = [sys.executable, "-m", "studroom.services.cli", "serve", "relay", "--batch-size", str(batch_size),
               "--log-level", "WARNING"]
    for schema in SCHEMAS:
        command += ["--schema", schema]
    return command


def test_relay_restarts_cancelled_and_killed_9_publish_everything_exactly_once(
    nats_server: EmbeddedNats, database: str, stores: dict[str, PostgresEventStore], private_dir: Path
) -> None:
    writer = Writer(stores, tables_per_store=4, hands=30, seed=2)
    writer.write(len(writer.queue) * 2 // 3)
    backlog = writer.written

    async def scenario() -> None:
        background = writer.write_in_background()
        config = RelayConfig(batch_size=200)
        async with Monitor(nats_server.url) as monitor:
            # 1. An in-process relay, cancelled mid-way (a task cancelled at any await).
            for fraction in (0.1, 0.25):
                stop = asyncio.Event()
                task, _ = start_relay(nats_server.url, database, config, stop)
                await monitor.wait_public(int(backlog * fraction))
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await asyncio.wait_for(task, 20)
            # 2. The relay as a process, killed with SIGKILL mid-way, twice.
            env = {**os.environ, "STUDROOM_NATS_URL": nats_server.url, "STUDROOM_DATABASE_URL": database,
                   "STUDROOM_DATA_DIR": str(private_dir / "relay-data")}
            for fraction in (0.45, 0.65):
                with (private_dir / "relay.log").open("ab") as log:
                    proc = await asyncio.create_subprocess_exec(
                        *_relay_command(150), env=env, stdout=log, stderr=subprocess.STDOUT
                    )
                try:
                    await monitor.wait_public(int(backlog * fraction))
                finally:
                    proc.send_signal(signal.SIGKILL)
                    await proc.wait()
            # 3. Once more in process, to the end.
            await asyncio.to_thread(background.join)
            stop = asyncio.Event()
            task, _ = start_relay(nats_server.url, database, config, stop)
            await monitor.wait_caught_up(stores)
        stop.set()
        relay = await asyncio.wait_for(task, 20)
        await audit(nats_server.url, stores, writer)
        assert all(s.recoveries >= 1 for s in relay.stats().values())

    asyncio.run(scenario())


def test_relay_survives_nats_killed_9_and_restarted(
    nats_server: EmbeddedNats, database: str, stores: dict[str, PostgresEventStore]
) -> None:
    writer = Writer(stores, tables_per_store=4, hands=30, seed=3)
    writer.write(len(writer.queue) * 2 // 3)
    backlog = writer.written

    async def scenario() -> None:
        background = writer.write_in_background()
        stop = asyncio.Event()
        task, _ = start_relay(nats_server.url, database, RelayConfig(batch_size=200), stop)
        async with Monitor(nats_server.url) as monitor:
            for fraction in (0.25, 0.6):
                await monitor.wait_public(int(backlog * fraction))
                await asyncio.to_thread(nats_server.kill)     # SIGKILL, same data dir
                await asyncio.sleep(0.3)                       # the relay backs off, retries
                assert not task.done()
                await asyncio.to_thread(nats_server.start)
            await asyncio.to_thread(background.join)
            await monitor.wait_caught_up(stores)
        stop.set()
        relay = await asyncio.wait_for(task, 20)
        assert relay.sessions >= 3
        await audit(nats_server.url, stores, writer)

    asyncio.run(scenario())


def test_resuming_does_not_depend_on_the_duplicate_window(
    nats_server: EmbeddedNats, database: str, stores: dict[str, PostgresEventStore]
) -> None:
    """The relay dies after a batch's acks, before its position record is written,
    and comes back after the duplicate window has passed: JetStream would store the
    batch again; the relay's recovery scan finds it there and skips it."""
    writer = Writer(stores, tables_per_store=3, hands=15, seed=4)
    writer.write()
    crashes = []

    def fault(point: str, store: str) -> None:
        if point == "acked" and len(crashes) < 3:
            crashes.append(store)
            time.sleep(0.4)              # longer than the window: dedupe forgot the batch
            raise RuntimeError("crash between acks and position record")

    async def scenario() -> None:
        stop = asyncio.Event()
        config = RelayConfig(batch_size=250, duplicate_window=0.2, fault=fault)
        task, _ = start_relay(nats_server.url, database, config, stop)
        async with Monitor(nats_server.url) as monitor:
            await monitor.wait_caught_up(stores)
        stop.set()
        relay = await asyncio.wait_for(task, 20)
        stats = relay.stats()
        assert len(crashes) == 3
        assert sum(s.skipped for s in stats.values()) >= 3 * 250
        assert sum(s.duplicates for s in stats.values()) == 0
        await audit(nats_server.url, stores, writer)

    asyncio.run(scenario())


def test_a_crash_with_several_small_batches_unrecorded_loses_and_doubles_nothing(
    nats_server: EmbeddedNats, database: str, stores: dict[str, PostgresEventStore]
) -> None:
    """Under live load the position is written every ``position_interval`` (or every
    ``batch_size`` notifications), not after each batch: a crash then leaves several
    acked batches unrecorded. The recovery scan (its window covers them) finds their
    messages stored, also after the duplicate window has passed."""
    writer = Writer(stores, tables_per_store=3, hands=30, seed=5)
    writer.write(len(writer.queue) // 20)
    crashes: list[tuple[str, int]] = []
    relays: list[Relay] = []

    def fault(point: str, store: str) -> None:
        if not relays:
            return
        relay = next(s for s in relays[0].stores if s.name == store)
        # crash once per store, when batches acked before this one are not recorded
        if point == "acked" and relay.unrecorded > 0 and store not in {c for c, _ in crashes}:
            crashes.append((store, relay.unrecorded))
            time.sleep(0.4)              # longer than the window: dedupe forgot the batches
            raise RuntimeError("crash with batches acked but not recorded")

    async def scenario() -> None:
        stop = asyncio.Event()
        config = RelayConfig(batch_size=250, duplicate_window=0.2, poll_interval=0.01,
                             position_interval=2.0, fault=fault)
        task, ready = start_relay(nats_server.url, database, config, stop)
        background = writer.write_in_background(pace=0.02)
        while not ready:
            await asyncio.sleep(0.01)
        relays.extend(ready)
        async with Monitor(nats_server.url) as monitor:
            await asyncio.to_thread(background.join)
            await monitor.wait_caught_up(stores)
        stop.set()
        relay = await asyncio.wait_for(task, 20)
        stats = relay.stats()
        assert crashes                    # (a store may have had big batches only)
        assert sum(s.skipped for s in stats.values()) > sum(unrecorded for _, unrecorded in crashes)
        assert sum(s.duplicates for s in stats.values()) == 0
        await audit(nats_server.url, stores, writer)

    asyncio.run(scenario())


def test_relay_survives_its_database_connections_being_killed(
    nats_server: EmbeddedNats, database: str, stores: dict[str, PostgresEventStore]
) -> None:
    """The relay reads on an asyncio connection of its own (and loads seat maps
    through the store's pool): both are re-opened after PostgreSQL drops them."""
    writer = Writer(stores, tables_per_store=3, hands=20, seed=6)
    writer.write(len(writer.queue) // 3)
    backlog = writer.written

    def kill_connections() -> int:
        with psycopg.connect(database, autocommit=True) as conn:
            return len(conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall())

    async def scenario() -> None:
        stop = asyncio.Event()
        task, _ = start_relay(nats_server.url, database, RelayConfig(batch_size=100), stop)
        async with Monitor(nats_server.url) as monitor:
            await monitor.wait_public(backlog // 3)
            assert await asyncio.to_thread(kill_connections) > 0
            background = writer.write_in_background(pace=0.01)
            await asyncio.sleep(0.2)
            await asyncio.to_thread(kill_connections)
            await asyncio.to_thread(background.join)
            await monitor.wait_caught_up(stores)
        stop.set()
        await asyncio.wait_for(task, 20)
        await audit(nats_server.url, stores, writer)

    asyncio.run(scenario())
