"""Commands per second of in-process table services over NATS, by number of stores;
or (``--active``) of the table service's core alone by number of active tables, past
its cache, with and without snapshots (:mod:`.loading`).

    studroom bench table [--tables 8] [--stores 1 2] [--seconds 5]
    studroom bench table --active 1000 20000 [--seconds 10]

``bench`` starts table-service instances in this process (each with its own NATS
connection), plays ``tables`` tables for ``seconds`` with random legal moves
(:class:`TablePlayer`, no think time) and reports commands/s and the request/reply
latency (p50, p99) as the client sees it, and whether every table's chips are
conserved.  Against ``STUDROOM_NATS_URL``/``STUDROOM_DATABASE_URL`` if set, else
embedded servers in a temporary folder.  The NATS server is an open one (no
authorization: the table service's own cost is measured here; ``bench room`` compares
authorization on and off), so one connection sends as every seat's player.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from studroom.domain.commands import BuyIn, Command, OpenTable, Show, SitDown
from studroom.domain.config import TableConfig
from studroom.domain.errors import MUST_SHOW
from studroom.domain.events import TurnStarted
from studroom.domain.simulate import STAKES, choose
from studroom.domain.table import Table
from studroom.projections.ledger.conservation import check_table
from studroom.services.client.table import TableClient
from studroom.services.runtime.arguments import positive_float, positive_int
from studroom.services.runtime.observability.stats import percentile
from studroom.services.store.port import EventStore

STACK = 1000


class TablePlayer:
    """Plays every seat of one table through the service: it follows the table in the
    event store (a replayed mirror), answers each turn with :func:`simulate.choose`
    and buys a busted seat in again.  Seats post their antes themselves.  Each seat's
    commands go as its player; the table's opening as an operator, buy-ins as the
    service "cashier"."""

    def __init__(self, nc: Any, store: EventStore, table_id: str, rng: random.Random) -> None:
        self.nc = nc
        self.floor = TableClient(nc, "operator", "bench")
        self.cashier = TableClient(nc, "service", "cashier")
        self.players: dict[int, TableClient] = {}
        self.store = store
        self.table_id = table_id
        self.rng = rng
        self.mirror = Table()
        self.turn: TurnStarted | None = None
        self.latencies: list[float] = []
        self.errors = 0

    async def sit_down(self, players: int) -> None:
        await self.send(OpenTable(table_id=self.table_id, config=TableConfig(game="seven_card_stud", stakes=STAKES)))
        for seat in range(players):
            player = f"{self.table_id}-p{seat}"
            self.players[seat] = TableClient(self.nc, "player", player)
            await self.send(SitDown(seat=seat, player=player))
            await self.send(BuyIn(seat=seat, amount=STACK, player=player))

    async def send(self, command: Command) -> str | None:
        """Send one command as whoever gives it: the refusal's code, or None."""
        seat = getattr(command, "seat", None)
        client = (self.cashier if isinstance(command, BuyIn) else
                  self.floor if isinstance(command, OpenTable) or seat is None else self.players[seat])
        started = time.perf_counter()
        reply = await client.send(self.table_id, command)
        self.latencies.append(time.perf_counter() - started)
        if reply.ok or reply.error is None:
            return None
        if reply.error.code != MUST_SHOW:
            self.errors += 1
        return reply.error.code

    async def play(self, until: float) -> None:
        while time.perf_counter() < until:
            events = await asyncio.to_thread(self.store.load, self.table_id, self.mirror.version)
            for event in events:
                self.mirror.apply(event)
                if isinstance(event, TurnStarted):
                    self.turn = event
            command = self._move()
            if command is None:
                await asyncio.sleep(0.001)
            elif await self.send(command) == MUST_SHOW:
                await self.send(Show(seat=command.seat))  # type: ignore[attr-defined]

    def _move(self) -> Command | None:
        """A busted seat's buy-in, or an answer to the open turn (None: wait)."""
        hand, turn = self.mirror.hand, self.turn
        for seat, state in self.mirror.seats.items():
            if state.stack == 0 and (hand is None or seat not in hand.players):
                return BuyIn(seat=seat, amount=STACK, player=state.player)
        if hand is None or turn is None or turn.turn != self.mirror.turn or turn.seat is None:
            return None
        return choose(turn, self.rng)


async def bench(
    nats_url: str,
    database_url: str,
    *,
    tables: int = 8,
    stores: int = 1,
    seconds: float = 5.0,
    instances: int = 1,
    players: int = 4,
) -> dict[str, Any]:
    import nats
    from studroom.services.store.layout import store_of_table, store_schema
    from studroom.services.store.postgres import PostgresEventStore
    from studroom.services.table.service import TableService

    run_id = uuid.uuid4().hex[:8]
    prefix = f"bench_{run_id}_p"
    bucket = f"bench_leases_{run_id}"
    service_stores = [
        [await asyncio.to_thread(PostgresEventStore, database_url, schema=store_schema(j, prefix),
                                 pool_size=2, max_overflow=2) for j in range(stores)]
        for _ in range(instances)
    ]
    reader = [await asyncio.to_thread(PostgresEventStore, database_url, schema=store_schema(j, prefix),
                                      pool_size=8, max_overflow=8) for j in range(stores)]
    connections = [await nats.connect(nats_url) for _ in range(instances)]
    services = [
        TableService(nc, service_stores[i], instance_id=f"bench-{run_id}-{i}", lease_bucket=bucket)
        for i, nc in enumerate(connections)
    ]
    for service in services:
        await service.start()
    for _ in range(3):      # let the instances share the partitions out
        for service in services:
            if service.leases is not None:
                await service.leases.tick()
    client_nc = await nats.connect(nats_url)
    played = [
        TablePlayer(client_nc, reader[store_of_table(f"b{run_id}t{k}", stores)], f"b{run_id}t{k}", random.Random(k))
        for k in range(tables)
    ]
    await asyncio.gather(*(p.sit_down(players) for p in played))
    for p in played:
        p.latencies.clear()
    started = time.perf_counter()
    await asyncio.gather(*(p.play(started + seconds) for p in played))
    elapsed = time.perf_counter() - started
    latencies = [x for p in played for x in p.latencies]
    sent = len(latencies)
    service_stats = [s.stats() for s in services]
    for service in services:
        await service.close()
    await client_nc.close()
    for nc in connections:
        await nc.close()
    ok = all(check_table(p.table_id, reader[store_of_table(p.table_id, stores)].load(p.table_id)).conserved
             for p in played)
    for group in [*service_stores, reader]:
        for store in group:
            store.close()
    batches = sum(st["batches"] for s in service_stats for st in s["stores"])
    commands = sum(st["commands"] for s in service_stats for st in s["stores"])
    events = sum(st["events"] for s in service_stats for st in s["stores"])
    return {
        "tables": tables, "stores": stores, "instances": instances, "seconds": round(elapsed, 2),
        "commands": sent, "commands_per_s": round(sent / elapsed, 1),
        "events_per_s": round(events / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 99) * 1000, 2),
        "mean_batch": round(commands / batches, 2) if batches else 0,
        "errors": sum(p.errors for p in played), "chips_conserved": ok,
    }


HELP = "commands/s of in-process table services over NATS, by number of stores"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tables", type=positive_int, default=8, help="tables played at once (default 8)")
    parser.add_argument("--stores", type=positive_int, nargs="+", default=[1, 2], help="store counts to compare (default 1 2)")
    parser.add_argument("--instances", type=positive_int, default=1, help="table services (default 1)")
    parser.add_argument("--seconds", type=positive_float, default=5.0, help="per configuration (default 5)")
    parser.add_argument("--active", type=positive_int, nargs="+", metavar="TABLES",
                        help="instead: commands/s of the table service's core (no NATS) with this many "
                             "active tables each (the smallest is the cached baseline), snapshots on and off")


def run(args: argparse.Namespace) -> int:
    if args.active:
        from .database import bench_database
        from .loading import active_tables

        with bench_database() as (database_url, where):
            print(f"PostgreSQL: {where}")
            for row in active_tables(database_url, sorted(args.active), args.seconds):
                print(json.dumps(row))
        return 0

    from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
    from studroom.services.runtime.servers.external_or_embedded import servers
    from studroom.services.runtime.settings import Settings

    env = Settings.from_env()
    with ExitStack() as stack:
        data_dir = Path(tempfile.mkdtemp(prefix="studroom-bench-"))
        stack.callback(shutil.rmtree, data_dir, True)
        open_nats = env.nats_url or stack.enter_context(EmbeddedNats(data_dir, auth=False)).url
        settings = Settings(nats_url=open_nats, database_url=env.database_url, data_dir=data_dir)
        nats_url, database_url = stack.enter_context(servers(settings))
        for n in args.stores:
            result = asyncio.run(bench(nats_url, database_url, tables=args.tables, stores=n,
                                       seconds=args.seconds, instances=args.instances))
            print(json.dumps(result))
    return 0
