"""Three NATS servers, one room (issue 13): the plain-file deploy variant on loopback.

Three nats-servers from deploy/nats/cluster.conf (operator mode, trusting a fresh
Authority through the ``studroom auth server-config`` file; routes authenticated;
TLS for clients, routes (mutual) and the monitor, from ``studroom auth tls``: every
process trusts the room's CA through ``STUDROOM_NATS_CA``), PostgreSQL, two table-service instances, the relay and the cashier, every process
and bot connecting with the three server URLs (``STUDROOM_NATS_URL`` comma
separated) and the streams and buckets created with 3 replicas. While the bots play:

1. SIGKILL of the node leading the public stream, then its restart (same store);
2. SIGKILL of one table-service instance (the other takes its partitions over until
   the supervisor, as systemd's ``Restart=always``, has started it again).

Then: every stored event is in the public stream exactly once (count and (table,
version) pairs), every table dealt hands after both faults, and
``studroom ledger reconcile`` finds no difference. The recovery times are printed.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import KeyNotFoundError, NoKeysError
from nats_nodes import ca_of, cluster, etc_nats, running, studroom_cli
from psycopg import sql
from studroom.domain.events import HandStarted
from studroom.services.auth.authority import Authority
from studroom.services.room.bots import Room
from studroom.services.room.plans import plan_tables, table_ids
from studroom.services.runtime.processes import process
from studroom.services.runtime.settings import DATABASE_URL_VAR, NATS_CA_VAR
from studroom.services.runtime.processes.supervisor import Services, child_env
from studroom.services.store.inspect import load_tables
from studroom.services.store.layout import store_schemas
from studroom.services.wire.subjects import LEASE_BUCKET
from studroom.services.wire import event_messages, subjects

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TABLES = 4
BOTS_PER_TABLE = 3
WARM_UP_HANDS = 8            # hands dealt before the first fault
HANDS_AFTER_FAULTS = 2       # each table starts this many hands after the last fault


class Tables:
    """Each table's last stored version and hands dealt, read from the stores."""

    def __init__(self, database_url: str, schemas: list[str], tables: list[str]) -> None:
        self.url, self.tables = database_url, tables
        self.query = sql.SQL(" UNION ALL ").join(
            sql.SQL("SELECT originator_id, max(originator_version), "
                    "count(*) FILTER (WHERE topic LIKE {}) FROM {} GROUP BY originator_id")
            .format(sql.Literal(f"%{HandStarted.__name__}"), sql.Identifier(schema, "events"))
            for schema in schemas)

    async def now(self) -> dict[str, tuple[int, int]]:
        """table -> (last version, hands started)."""
        def read() -> dict[str, tuple[int, int]]:
            with psycopg.connect(self.url, autocommit=True) as conn:
                found = {row[0]: (row[1], row[2]) for row in conn.execute(self.query).fetchall()}
            return {table: found.get(table, (0, 0)) for table in self.tables}
        return await asyncio.to_thread(read)

    async def all_past(self, before: dict[str, tuple[int, int]], *, versions: int = 1, hands: int = 0) -> float:
        """Seconds until every table stored ``versions`` events and started ``hands``
        hands beyond ``before``."""
        async def moved() -> bool:
            now = await self.now()
            return all(now[t][0] >= before[t][0] + versions and now[t][1] >= before[t][1] + hands
                       for t in self.tables)
        return await until(moved, f"a table stalled after {before}")


async def until(condition: Callable[[], bool | Awaitable[bool]], what: str, timeout: float = 30) -> float:
    """Seconds until ``condition()`` holds (checked every 0.1 s; it may be a coroutine)."""
    started = time.monotonic()
    while not await _value(condition()):
        assert time.monotonic() - started < timeout, what
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def leases_of(js: Any, instance: str) -> list[int]:
    """The revisions of the partition leases ``instance`` holds."""
    kv = await js.key_value(LEASE_BUCKET)
    revisions = []
    try:
        keys = await kv.keys()
    except NoKeysError:                 # none, or none seen in time: look again
        return []
    for key in (k for k in keys if k.startswith("p.")):
        try:
            entry = await kv.get(key)
        except KeyNotFoundError:        # expired since: nobody's
            continue
        if entry.value == instance.encode():
            revisions.append(entry.revision)
    return revisions


async def supervise(services: Services) -> None:
    """Start dead children again, as systemd does (``Restart=always``), until cancelled."""
    while True:
        services.supervise()
        await asyncio.sleep(0.2)


async def _value(result: bool | Awaitable[bool]) -> bool:
    return await result if inspect.isawaitable(result) else result


def assert_all_tls(nodes: list[Any]) -> None:
    """Every client connection (services, bots, this test's) of every node is TLS (the
    monitor, itself https, says which version each speaks), and every node's routes
    require mutual TLS."""
    connections = []
    for node in nodes:
        connections += (node.get("connz?limit=1000") or {}).get("connections") or []
        cluster = (node.get("varz") or {}).get("cluster") or {}
        assert cluster.get("tls_required") and cluster.get("tls_verify"), (node.url, cluster)
    assert len(connections) > TABLES * BOTS_PER_TABLE
    plain = [c.get("name") for c in connections if not c.get("tls_version")]
    assert not plain, f"plain-text clients: {plain}"


async def public_stream(nc: Any, tables: set[str]) -> list[tuple[str, int]]:
    """The (table, version) of each event of the public stream's messages."""
    js = nc.jetstream()
    info = await js.stream_info(subjects.PUBLIC_STREAM)
    sub = await js.pull_subscribe(subjects.all_public_events(), stream=subjects.PUBLIC_STREAM,
                                  config=ConsumerConfig(ack_policy=AckPolicy.NONE))
    seen: list[tuple[str, int]] = []
    read = 0
    try:
        while read < info.state.messages:
            msgs = await sub.fetch(500, timeout=5)
            read += len(msgs)
            for msg in msgs:
                table = subjects.table_of_public(msg.subject)
                seen += [(table, version) for version, _ in event_messages.events_of(msg)]
    finally:
        await sub.unsubscribe()
    assert {table for table, _ in seen} <= tables
    return seen


def test_three_nats_servers_one_room_survive_a_killed_node_and_a_killed_table_service(
        tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    figures: dict[str, float] = {}
    run = uuid.uuid4().hex[:6]
    prefix = f"cl{run}_p"
    schemas = store_schemas(2, prefix)
    ids = table_ids(TABLES, prefix=f"cl{run}t")
    etc = etc_nats(tmp_path / "etc")
    authority = Authority(etc / "auth")
    monkeypatch.setenv(NATS_CA_VAR, str(ca_of(etc)))          # this process's and its children's trust
    nodes = cluster(etc)
    figures["cluster formed, JetStream current on every node"] = time.monotonic() - started
    urls = ",".join(node.url for node in nodes)
    services = Services(child_env(urls, database_url, tmp_path / "data"), tmp_path / "logs", instances=2,
                        stores=2, name=f"cl{run}", schema_prefix=prefix, authority=authority, replicas=3,
                        lobby=False, history=False, ledger=False)
    tables = Tables(database_url, schemas, ids)

    async def play() -> list[tuple[str, int]]:
        room = Room(urls, plan_tables(ids, BOTS_PER_TABLE, {}), authority=authority, pace_ms=0, seed=13)
        auditor = await process.connect(urls, "studroom-test-auditor",
                                        creds=authority.ensure("service", "projections"))
        js = auditor.jetstream()
        supervising = asyncio.create_task(supervise(services))
        try:
            await room.start()
            figures["up: bots seated"] = time.monotonic() - started
            await until(lambda: room.stats.hands >= WARM_UP_HANDS, "the room did not play")

            async def recovery(fault: str) -> None:
                """After a fault: seconds until every table stored an event, and started a hand."""
                since = time.monotonic()
                before = await tables.now()
                await tables.all_past(before)
                figures[f"{fault} -> every table stored again"] = time.monotonic() - since
                await tables.all_past(before, hands=1)
                figures[f"{fault} -> every table started a new hand"] = time.monotonic() - since

            # 1. SIGKILL the node that leads the public stream; restart it on its store.
            leader = (await js.stream_info(subjects.PUBLIC_STREAM)).cluster.leader
            victim = next(node for node in nodes if (node.get("varz") or {}).get("server_name") == leader)
            victim.kill()
            killed = time.monotonic()
            await recovery(f"NATS node {leader} (stream leader) killed")
            await asyncio.sleep(max(0.0, 2.0 - (time.monotonic() - killed)))
            victim.restart()
            figures[f"{leader} restarted -> healthy (current with the cluster)"] = await until(
                lambda: asyncio.to_thread(victim.healthy), "the restarted node did not catch up")

            # 2. SIGKILL one table-service instance: the other takes its partitions over
            #    until the supervisor (as systemd would) has started it again.
            name, proc, _ = services.procs[0]
            assert name.endswith("table-1"), name
            instance = f"cl{run}-1"

            async def serving() -> bool:
                return bool(await leases_of(js, instance))
            await until(serving, f"{instance} serves no partition")      # it serves: kill it
            last_then = (await js.stream_info(f"KV_{LEASE_BUCKET}")).state.last_seq
            proc.kill()
            killed = time.monotonic()
            await recovery("table service instance killed")

            async def serving_again() -> bool:
                return any(revision > last_then for revision in await leases_of(js, instance))
            await until(serving_again, f"{name} was not started again, or took no partition", 40)
            figures[f"{name} killed -> started again, serving partitions"] = time.monotonic() - killed

            # Hands go on at every table.
            figures["then every table dealt more hands"] = await tables.all_past(
                await tables.now(), hands=HANDS_AFTER_FAULTS)
            assert_all_tls(nodes)
            assert services.restarts() == {name: 1} and not services.dead(), services.dead()

            # Stop the bots; the relay publishes what is stored.
            for bot in room.bots:
                bot.pause()
            await room.stop()
            stored = sum(version for version, _ in (await tables.now()).values())

            async def relayed() -> bool:
                return len(await public_stream(auditor, set(ids))) >= stored
            await until(relayed, "the relay did not publish every stored event")
            await asyncio.sleep(0.5)                      # anything published twice would show now
            return await public_stream(auditor, set(ids))
        finally:
            supervising.cancel()
            await room.stop()
            await auditor.drain()

    with running(*nodes):
        services.start()
        try:
            seen = asyncio.run(play())
        finally:
            problems = services.stop()
    # Every stored event published exactly once: each (table, version) once, none missing.
    stored = load_tables(database_url, schemas, ids)
    expected = {(table, version) for table, events in stored.items() for version in range(1, len(events) + 1)}
    twice = [pair for pair, n in Counter(seen).items() if n > 1]
    assert not twice, f"published twice: {twice[:10]}"
    assert set(seen) == expected, f"missing {sorted(expected - set(seen))[:10]}"
    hands = {table: sum(isinstance(e, HandStarted) for e in events) for table, events in stored.items()}

    print(f"\n{len(expected)} events stored and published once each; hands per table {hands}")
    for what, seconds in figures.items():
        print(f"  {what}: {seconds:.2f} s")
    assert not problems, problems

    # The books reconcile with the stores.
    reconciled = studroom_cli("ledger", "reconcile", *[f"--schema={s}" for s in schemas],
                              f"--cashier-schema={prefix}cashier", f"--ledger-schema={prefix}ledger",
                              env={DATABASE_URL_VAR: database_url})
    print(f"  studroom ledger reconcile: exit 0, {reconciled.strip().splitlines()[-1]}")
    print(f"  the whole test: {time.monotonic() - started:.1f} s")
