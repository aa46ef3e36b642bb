"""The table service on real servers: NATS (the partition mapping, leases in KV,
request/reply) and PostgreSQL (the event stores), several instances, kill -9."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import psycopg
import pytest
from psycopg import sql
from studroom.domain.commands import Act, BuyIn, OpenTable, SitDown
from studroom.domain.errors import DUPLICATE_COMMAND, NOT_YOUR_TURN
from studroom.domain.events import TableEvent
from studroom.domain.table import Table
from studroom.projections.ledger.conservation import check_table
from studroom.services.wire import protocol
from studroom.services.wire import subjects
from studroom.services.table.command_handling import CommandHandler
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.store.codec import register_event_types
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.store.layout import store_of_table, store_schema
from studroom.services.table.partitions import lease_owners
from studroom.services.wire.subjects import LEASE_BUCKET
from studroom.services.wire.partitioning import partition_of
from studroom.services.table.service import TableService
from table_driver import TableDriver, table_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

register_event_types(TableEvent)


def _id() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
def schema_prefix(database_url: str) -> Iterator[str]:
    """Event-store schemas of this test only (dropped afterwards)."""
    prefix = f"ts_{_id()}_p"
    yield prefix
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (prefix + "%",)
        ).fetchall()
        for (schema,) in rows:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def lease_bucket(nats_url: str) -> Iterator[str]:
    bucket = f"ts_leases_{_id()}"
    yield bucket

    async def drop() -> None:
        nc = await nats.connect(nats_url)
        with contextlib.suppress(Exception):
            await nc.jetstream().delete_key_value(bucket)
        await nc.close()

    asyncio.run(drop())


def open_stores(database_url: str, prefix: str, n: int, pool: int = 2) -> list[PostgresEventStore]:
    return [PostgresEventStore(database_url, schema=store_schema(j, prefix), pool_size=pool, max_overflow=pool)
            for j in range(n)]


async def drive(drivers: list[TableDriver], commands: int) -> None:
    """Play the tables at once until ``commands`` more commands were sent in all."""
    target = sum(d.sent for d in drivers) + commands

    async def play(driver: TableDriver) -> None:
        while sum(d.sent for d in drivers) < target:
            if await driver.step() is None:
                await asyncio.sleep(0.005)

    await asyncio.gather(*(play(d) for d in drivers))


def assert_tables_sound(stores: list[PostgresEventStore], drivers: list[TableDriver]) -> None:
    for driver in drivers:
        events = stores[store_of_table(driver.table_id, len(stores))].load(driver.table_id)
        chips = check_table(driver.table_id, events)
        assert chips.conserved, chips.bad or chips.summary()
        table = Table.replay(events)
        assert table.version == len(events) and table.hand_no > 0, driver.table_id
        ids = [e.command_id for e in events if e.command_id is not None]
        assert len(ids) == len(set(ids)), f"{driver.table_id}: a command was carried out twice"


# ------------------------------------------------------------------ the mapping


def test_partition_mapping_is_deterministic_and_request_reply_goes_through_it(nats_url: str) -> None:
    """Each role's command subject lands on the table's partition, sender in the tail."""

    async def main() -> None:
        nc = await nats.connect(nats_url)

        async def echo(msg: Any) -> None:
            await msg.respond(msg.subject.encode())

        sub = await nc.subscribe("studroom.pcmd.>", cb=echo)
        tables = [f"map-{_id()}-{k}" for k in range(64)] + ["t1", "table-0", "a_b-C"]
        senders = [("player", "ann"), ("operator", "floor"), ("service", "timer")]
        for _ in range(2):
            for k, table_id in enumerate(tables):
                role, name = senders[k % len(senders)]
                reply = await nc.request(subjects.command_from(role, name, table_id), b"{}", timeout=2)
                expected = f"studroom.pcmd.{partition_of(table_id)}.{table_id}.{role}.{name}"
                assert reply.data.decode() == expected
                assert subjects.sender_of(expected) == (table_id, role, name)
        await sub.unsubscribe()
        await nc.close()

    asyncio.run(main())


# ------------------------------------------------------------------ in one process


def test_two_instances_share_the_partitions_and_play_many_tables(
    nats_url: str, database_url: str, schema_prefix: str, lease_bucket: str
) -> None:
    stores = 2

    async def main() -> None:
        connections = [await nats.connect(nats_url) for _ in range(2)]
        services = [
            TableService(nc, open_stores(database_url, schema_prefix, stores), instance_id=f"it-{k}",
                         lease_bucket=lease_bucket)
            for k, nc in enumerate(connections)
        ]
        for service in services:
            await service.start()
        for _ in range(2):       # heartbeats: the first gives back what the second takes
            for service in services:
                await service.leases.tick()
        owned = [set(s.owned()) for s in services]
        assert owned[0].isdisjoint(owned[1]) and owned[0] | owned[1] == set(range(16))
        assert [len(o) for o in owned] == [8, 8]
        assert await lease_owners(connections[0].jetstream(), lease_bucket) == {
            p: s.instance_id for s in services for p in s.owned()
        }

        readers = open_stores(database_url, schema_prefix, stores, pool=6)
        client_nc = await nats.connect(nats_url)
        tables = [f"it{_id()}{k}" for k in range(6)]
        drivers = [TableDriver(client_nc, readers[store_of_table(t, stores)], t, players=3 + k % 3,
                               rng=random.Random(k)) for k, t in enumerate(tables)]
        await asyncio.gather(*(d.setup() for d in drivers))
        await drive(drivers, 400)
        assert [e for d in drivers for e in d.errors] == []
        stats = [s.stats() for s in services]
        served = [sum(st["commands"] for st in s["stores"]) for s in stats]
        assert sum(served) >= 400 + len(drivers)
        assert all(n > 0 for n in served) or len({partition_of(t) in owned[0] for t in tables}) == 1
        assert sum(st["hands_started"] for s in stats for st in s["stores"]) > 5
        assert sum(st["conflicts"] + st["internal_errors"] for s in stats for st in s["stores"]) == 0
        for service in services:
            await service.close()
        assert await lease_owners(connections[0].jetstream(), lease_bucket) == {}   # given back
        await client_nc.close()
        for nc in connections:
            await nc.close()
        assert_tables_sound(readers, drivers)
        for store in readers:
            store.close()
        for service in services:
            for worker in service.workers:
                worker.handler.store.close()  # type: ignore[attr-defined]

    asyncio.run(main())


def test_bad_commands_get_clear_errors_and_change_nothing(
    nats_url: str, database_url: str, schema_prefix: str, lease_bucket: str
) -> None:
    async def main() -> None:
        store = open_stores(database_url, schema_prefix, 1)[0]
        nc = await nats.connect(nats_url)
        service = TableService(nc, [store], instance_id=f"err-{_id()}", lease_bucket=lease_bucket)
        await service.start()
        table_id = f"err{_id()}"
        driver = TableDriver(nc, store, table_id, players=2, retry_for=3)
        await driver.setup()
        await driver.refresh()
        length = len(store.load(table_id))
        assert driver.mirror.hand is not None                 # dealt by itself

        async def code(data: bytes, table: str = table_id) -> str:
            msg = await nc.request(subjects.command_from("operator", "floor", table), data, timeout=2)
            reply = protocol.decode_reply(msg.data)
            assert not reply.ok and reply.error is not None and reply.error.message
            return reply.error.code

        assert await code(b"\x00not json") == protocol.BAD_REQUEST
        assert await code(b'{"type": "Act", "seat": 0}') == protocol.BAD_REQUEST
        assert await code(protocol.encode_command(Act(seat=0, action="call")), f"ghost{_id()}") == protocol.UNKNOWN_TABLE
        seat = driver.mirror.hand.to_act
        other = next(s for s in driver.mirror.hand.players if s != seat)
        reply = await driver.seated[other].send(table_id, Act(seat=other, action="call"))
        assert reply.error is not None and reply.error.code == NOT_YOUR_TURN
        assert len(store.load(table_id)) == length
        act = Act(seat=seat, action="bring_in", command_id=driver.seated[seat].ids.next())
        first = await driver.seated[seat].send(table_id, act)
        assert first.ok and first.version > length
        length = len(store.load(table_id))
        again = await driver.seated[seat].send(table_id, act)
        assert again.error is not None and again.error.code == DUPLICATE_COMMAND
        assert len(store.load(table_id)) == length
        await service.close()
        await nc.close()
        store.close()

    asyncio.run(main())


def test_two_writers_on_the_same_tables_never_corrupt_them(
    nats_url: str, database_url: str, schema_prefix: str
) -> None:
    """Worst case of a double owner: two instances serve ALL partitions, each in its
    own queue group, so both get and run EVERY command on their own cached tables.
    The store's expected versions let one write; the other reloads and retries
    (and then finds the command id carried out)."""

    async def main() -> None:
        stores = [open_stores(database_url, schema_prefix, 1)[0] for _ in range(2)]
        connections = [await nats.connect(nats_url) for _ in range(2)]
        services = [
            TableService(nc, [stores[k]], instance_id=f"dbl-{k}", static_partitions=range(16),
                         queue=f"dbl_{k}_{_id()}")
            for k, nc in enumerate(connections)
        ]
        for service in services:
            await service.start()
        reader = open_stores(database_url, schema_prefix, 1, pool=4)[0]
        client_nc = await nats.connect(nats_url)
        # the loser's retry may answer first: "duplicate_command" (carried out by the other)
        drivers = [TableDriver(client_nc, reader, f"dbl{_id()}{k}", players=3, rng=random.Random(k),
                               tolerate=frozenset({DUPLICATE_COMMAND})) for k in range(3)]
        for d in drivers:
            await d.setup()
        await drive(drivers, 240)
        stats = [s.stats() for s in services]
        conflicts = sum(st["conflicts"] for s in stats for st in s["stores"])
        assert conflicts > 0
        assert [e for d in drivers for e in d.errors] == []
        for service in services:
            await service.close()
        await client_nc.close()
        for nc in connections:
            await nc.close()
        assert_tables_sound([reader], drivers)
        for store in [*stores, reader]:
            store.close()

    asyncio.run(main())


def test_a_stale_cached_table_loses_the_race_and_retries_on_postgres(
    database_url: str, schema_prefix: str
) -> None:
    store = open_stores(database_url, schema_prefix, 1)[0]
    a, b = CommandHandler(store), CommandHandler(store)
    table_id = f"race{_id()}"
    assert a.handle(table_id, OpenTable(table_id=table_id, config=table_config())).ok
    assert b.handle(table_id, SitDown(seat=0, player="ann")).ok        # a is stale now
    assert a.handle(table_id, SitDown(seat=1, player="bob")).ok        # conflict, retried
    assert a.stats.conflicts == 1
    assert a.handle(table_id, BuyIn(seat=0, amount=1000)).ok
    assert b.handle(table_id, BuyIn(seat=1, amount=1000)).ok           # b stale: retried, starts a hand
    events = store.load(table_id)
    table = Table.replay(events)
    assert sorted(table.seats) == [0, 1] and table.hand is not None and table.version == len(events)
    store.close()


# ------------------------------------------------------------------ subprocesses, kill -9


class Instance:
    def __init__(self, instance_id: str, env: dict[str, str], log_dir: Path, args: list[str]) -> None:
        self.instance_id = instance_id
        self.log_path = log_dir / f"{instance_id}.log"
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "studroom.services.cli", "serve", "table", "--instance-id", instance_id,
             "--log-level", "INFO", *args],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )

    def tail(self) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def test_kill_9_an_instance_mid_hand_and_the_other_carries_on(
    nats_url: str, database_url: str, schema_prefix: str, lease_bucket: str
) -> None:
    env = {**os.environ, "STUDROOM_NATS_URL": nats_url, "STUDROOM_DATABASE_URL": database_url}
    args = ["--stores", "1", "--schema-prefix", schema_prefix, "--lease-bucket", lease_bucket]
    log_dir = Path(tempfile.mkdtemp(prefix="studroom-it-ts-"))
    instances = [Instance(f"kill-{k}-{_id()}", env, log_dir, args) for k in range(2)]
    ids = {i.instance_id for i in instances}

    async def owners(nc: Any) -> dict[int, str]:
        try:
            return await lease_owners(nc.jetstream(), lease_bucket)
        except Exception:   # noqa: BLE001 (bucket not created yet)
            return {}

    async def wait_for(nc: Any, check: Any, seconds: float, what: str) -> dict[int, str]:
        deadline = time.monotonic() + seconds
        while True:
            current = await owners(nc)
            if check(current):
                return current
            dead = [i for i in instances if i.proc.poll() is not None and i.instance_id in ids]
            assert not dead, f"instance died: {dead[0].tail()}"
            assert time.monotonic() < deadline, f"{what}: {current}\n" + "\n".join(i.tail() for i in instances)
            await asyncio.sleep(0.1)

    async def main() -> None:
        nc = await nats.connect(nats_url)
        shared = await wait_for(
            nc, lambda o: len(o) == 16 and set(o.values()) == ids
            and all(list(o.values()).count(i) == 8 for i in ids), 30, "partitions not shared 8/8")
        store = open_stores(database_url, schema_prefix, 1, pool=6)[0]
        tables = [f"k9{_id()}{k}" for k in range(4)]
        drivers = [TableDriver(nc, store, t, players=4, rng=random.Random(k)) for k, t in enumerate(tables)]
        for d in drivers:
            await d.setup()
        await drive(drivers, 120)
        # the victim: the owner of the first table, killed while a hand is on
        victim_table = drivers[0]
        victim = next(i for i in instances if i.instance_id == shared[partition_of(victim_table.table_id)])
        await victim_table.refresh()
        assert victim_table.mirror.hand is not None
        hand_no = victim_table.mirror.hand.hand_no
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        ids.discard(victim.instance_id)
        killed = time.monotonic()
        reply = await victim_table.step()                    # waits for the takeover
        took = time.monotonic() - killed
        assert reply is not None and reply.ok, reply
        await victim_table.refresh()
        mirror = victim_table.mirror      # the same hand went on (or was finished) through the other
        assert (mirror.hand is not None and mirror.hand.hand_no == hand_no) or mirror.hand_no >= hand_no
        assert took < 10, f"takeover took {took:.1f}s"
        survivor = next(iter(ids))
        await wait_for(nc, lambda o: len(o) == 16 and set(o.values()) == {survivor}, 10,
                       "survivor did not take every partition")
        await drive(drivers, 160)
        assert {code for d in drivers for _, code, _ in d.errors} <= set(), [d.errors for d in drivers]
        assert_tables_sound([store], drivers)
        print(f"takeover after kill -9: first command through after {took:.2f}s")
        store.close()
        await nc.close()

    try:
        asyncio.run(main())
        survivor = next(i for i in instances if i.instance_id in ids)
        assert survivor.stop() == 0, survivor.tail()

        async def released() -> dict[int, str]:
            nc = await nats.connect(nats_url)
            try:
                return await lease_owners(nc.jetstream(), lease_bucket)
            finally:
                await nc.close()

        assert asyncio.run(released()) == {}           # a clean stop gives the leases back
    finally:
        for instance in instances:
            instance.stop()


# ------------------------------------------------------------------ NATS restarts


def test_the_service_rides_out_a_nats_restart(
    private_dir: Path, database_url: str, schema_prefix: str
) -> None:
    """A private NATS server is killed and started again (same port, same data; the
    lease bucket is in memory and gone): the instance re-creates the bucket, claims
    its partitions again and the table plays on."""
    server = EmbeddedNats(private_dir, auth=False).start()

    async def main() -> None:
        store = open_stores(database_url, schema_prefix, 1)[0]
        nc = await nats.connect(server.url, reconnect_time_wait=0.2, max_reconnect_attempts=-1)
        service = TableService(nc, [store], instance_id=f"rs-{_id()}")
        await service.start()
        client_nc = await nats.connect(server.url, reconnect_time_wait=0.2, max_reconnect_attempts=-1)
        reader = open_stores(database_url, schema_prefix, 1)[0]
        driver = TableDriver(client_nc, reader, f"rs{_id()}", players=3, retry_for=15)
        await driver.setup()
        await drive([driver], 30)
        await asyncio.to_thread(server.kill)
        await asyncio.sleep(0.3)
        await asyncio.to_thread(server.start)
        restarted = time.monotonic()
        await drive([driver], 30)
        all_mine = {p: service.instance_id for p in range(16)}
        while True:                  # the bucket is back, with every lease in it
            with contextlib.suppress(Exception):
                if await lease_owners(nc.jetstream(), LEASE_BUCKET) == all_mine:
                    break
            assert time.monotonic() - restarted < 15, "leases not claimed again"
            await asyncio.sleep(0.1)
        await drive([driver], 30)
        assert driver.errors == [] and service.owned() == list(range(16))
        await service.close()
        await client_nc.close()
        await nc.close()
        assert_tables_sound([reader], [driver])
        store.close()
        reader.close()

    try:
        asyncio.run(main())
    finally:
        server.stop()
