"""The relay against real servers: PostgreSQL event stores (schemas studroom_p0 and
studroom_p1 in a database of the test's own) and an embedded NATS with JetStream of
the test's own, open (some tests kill it; the relay under credentials:
test_relay_set_aside.py).

Every test ends with the same audit of the streams against the stores
(``relay_stack.audit``): every event exactly once on its table's public subject, in
version order, as its public view; every player's private subject carries exactly his
own copies (his down cards), in order; no other message.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from relay_stack import SCHEMAS, Monitor, Writer, audit, start_relay
from studroom.services.relay.config import RelayConfig
from studroom.services.relay.relay import Relay
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.wire import subjects

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def nats_server(private_dir: Path) -> Iterator[EmbeddedNats]:
    """A NATS of this test's own: tests kill it, and the streams start empty."""
    with EmbeddedNats(private_dir, auth=False) as server:
        yield server


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
                arrived.put_nowait(time.perf_counter())      # one message per commit

            await monitor.nc.subscribe(subjects.all_public_events(), cb=on_public)
            await monitor.nc.flush()
            latencies = []
            for _ in range(10):
                schema = writer.queue[-1][0]
                before = writer.written
                started = time.perf_counter()
                await asyncio.to_thread(writer.write, 1, 1)
                await monitor.nc.publish(subjects.relay_nudge(schema))
                assert writer.written > before
                latencies.append(await asyncio.wait_for(arrived.get(), 3) - started)
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
    through the store's pool) and hears the database's commits on a third: each is
    re-opened after PostgreSQL drops them. No nudges here: once the listeners listen
    again, what is written comes through because it is heard (a relay that hears
    nothing reads nothing)."""
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
        task, ready = start_relay(nats_server.url, database, RelayConfig(batch_size=100), stop)
        last = writer.queue[:10]           # written last, once the listeners listen again
        del writer.queue[:10]
        async with Monitor(nats_server.url) as monitor:
            await monitor.wait_public(backlog // 3)
            assert await asyncio.to_thread(kill_connections) > 0
            background = writer.write_in_background(pace=0.01)
            await asyncio.sleep(0.2)
            await asyncio.to_thread(kill_connections)
            await asyncio.to_thread(background.join)
            await monitor.wait_caught_up(stores)
            while not all(s.commits is not None and s.commits.listening for s in ready[0].stores):
                await asyncio.sleep(0.05)
            writer.queue[:0] = last
            await asyncio.to_thread(writer.write)
            await monitor.wait_caught_up(stores)
            # Nothing written, nothing heard: no reads (it polled ten times a second).
            while any(s.commits.wake.is_set() or s.wake.is_set() or s.unrecorded for s in ready[0].stores):
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)                 # the last read, if one was under way
            reads = sum(s.stats.reads for s in ready[0].stores)
            await asyncio.sleep(1.0)
            assert sum(s.stats.reads for s in ready[0].stores) == reads
        stop.set()
        await asyncio.wait_for(task, 20)
        await audit(nats_server.url, stores, writer)

    asyncio.run(scenario())


def test_a_busy_relay_stops_listening_and_polls_and_listens_again_when_quiet(
    nats_server: EmbeddedNats, database: str, stores: dict[str, PostgresEventStore]
) -> None:
    """Listening only while idle (relay.md): no nudges here, so a store written to
    steadily is read because its commits are heard, then, busy, by the poll alone (its
    listener stops hearing); quiet again, it listens, and a commit is read because it
    is heard. Heard, a commit makes the relay poll a ``poll_interval`` later (the
    nudge's guard), and that read makes it busy: the commits of that first 0.1 s may be
    heard too (in CI 21 of ~78 were, in a write of 0.35 s), so the write lasts about a
    second (a write every 20 ms, well inside the 0.1 s that would make it idle again)."""
    writer = Writer(stores, tables_per_store=3, hands=20, seed=8)
    last = writer.queue[:5]
    del writer.queue[:5]

    async def scenario() -> None:
        stop = asyncio.Event()
        task, ready = start_relay(nats_server.url, database, RelayConfig(batch_size=100), stop)
        async with Monitor(nats_server.url) as monitor:
            while not ready or not all(s.commits is not None and s.commits.listening for s in ready[0].stores):
                await asyncio.sleep(0.05)
            relays = ready[0].stores
            background = writer.write_in_background(pace=0.02)
            deaf = False        # seen not listening while the commits came
            while background.is_alive():
                deaf |= not all(s.commits.listening for s in relays)
                await asyncio.sleep(0.01)
            await monitor.wait_caught_up(stores)
            assert deaf, "busy, it stopped listening"
            assert sum(s.commits.heard for s in relays) < writer.appends / 2, "busy, it heard few"
            while not all(s.commits.listening for s in relays):
                await asyncio.sleep(0.05)
            heard = sum(s.commits.heard for s in relays)
            writer.queue[:0] = last
            await asyncio.to_thread(writer.write)
            await monitor.wait_caught_up(stores)
            assert sum(s.commits.heard for s in relays) > heard
        stop.set()
        await asyncio.wait_for(task, 20)
        await audit(nats_server.url, stores, writer)

    asyncio.run(scenario())
