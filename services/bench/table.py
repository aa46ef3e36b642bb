"""Drive tables through the table service, as bots would, and measure it.

    studroom bench table [--tables 8] [--stores 1 2] [--seconds 5]

:class:`TableDriver` plays one table with random legal moves through a
:class:`~studroom.services.players.client.TableClient` (NATS request/reply, no think time).
It learns the table's state the way a trusted tool may: by reading the table's
events from the event store after each reply and replaying them into a local
:class:`~studroom.domain.table.Table` (a read-only mirror; the service alone
writes). The integration tests use it too.

``bench`` starts table-service instances in this process (each with its own NATS
connection), drives ``tables`` tables for ``seconds`` and reports commands/s and the
request/reply latency (p50, p99) as the client sees it. Against
``STUDROOM_NATS_URL``/``STUDROOM_DATABASE_URL`` if set, else embedded servers in a
temporary folder.
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

from studroom.domain.commands import (
    Act,
    BuyIn,
    Command,
    Muck,
    OpenTable,
    PostAnte,
    Show,
    SitDown,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.events import (
    ChipsBought,
    HandEnded,
    PlayerLeft,
    TurnStarted,
)
from studroom.domain.table import Table
from ..players.client import TableClient
from ..store.event_store import EventStore
from ..wire.protocol import Reply
from ..runtime.stats import percentile

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
WEIGHTS = {"fold": 1, "check": 4, "call": 5, "bet": 2, "raise": 2, "complete": 2, "bring_in": 4}


def table_config(game: str = "seven_card_stud", **extra: Any) -> TableConfig:
    return TableConfig(game=game, stakes=STAKES, **extra)


class TableDriver:
    """Plays one table: ``setup()`` opens it and seats ``players`` with chips (the
    service then deals by itself), ``step()`` sends the next legal command."""

    def __init__(
        self,
        client: TableClient,
        store: EventStore,
        table_id: str,
        *,
        players: int = 4,
        stack: int = 1000,
        rng: random.Random | None = None,
        config: TableConfig | None = None,
        tolerate: frozenset[str] = frozenset(),
    ) -> None:
        self.client = client
        self.tolerate = tolerate | {"must_show"}   # refusals that are not errors
        self.store = store
        self.table_id = table_id
        self.players = players
        self.stack = stack
        self.rng = rng or random.Random()
        self.config = config or table_config()
        self.mirror = Table()
        self.turn: TurnStarted | None = None
        self.latencies: list[float] = []
        self.sent = 0
        self.errors: list[tuple[str, str, str]] = []   # (command, code, message)
        self.must_show: int | None = None

    async def request(self, command: Command) -> Reply:
        started = time.perf_counter()
        reply = await self.client.send(self.table_id, command)
        self.latencies.append(time.perf_counter() - started)
        self.sent += 1
        if not reply.ok and reply.error is not None and reply.error.code not in self.tolerate:
            self.errors.append((type(command).__name__, reply.error.code, reply.error.message))
        return reply

    async def setup(self) -> None:
        replies = [await self.request(OpenTable(table_id=self.table_id, config=self.config))]
        for seat in range(self.players):
            replies.append(await self.request(SitDown(seat=seat, player=f"{self.table_id}-p{seat}")))
            replies.append(await self.request(BuyIn(seat=seat, amount=self.stack)))
        bad = [r for r in replies if not r.ok and r.error is not None and r.error.code not in self.tolerate]
        if bad:
            raise RuntimeError(f"setting up {self.table_id} failed: {bad}")

    async def refresh(self) -> None:
        events = await asyncio.to_thread(self.store.load, self.table_id, self.mirror.version)
        for event in events:
            self.mirror.apply(event)
            if isinstance(event, TurnStarted):
                self.turn = event

    def next_command(self) -> Command | None:
        table, rng = self.mirror, self.rng
        hand = table.hand
        for seat, state in sorted(table.seats.items()):   # busted and not in the hand: buy again
            if state.stack == 0 and (hand is None or seat not in hand.players):
                return BuyIn(seat=seat, amount=self.stack)
        if hand is None or self.turn is None or self.turn.turn != table.turn:
            return None
        turn = self.turn
        if turn.kind == "ante":
            seat = next((s for s, p in hand.players.items() if not p.posted and not p.folded), None)
            return None if seat is None else PostAnte(seat=seat)
        if hand.to_act is None:
            return None
        seat = hand.to_act
        if turn.kind == "show":
            if self.must_show == seat or rng.random() < 0.8:
                return Show(seat=seat)
            return Muck(seat=seat)
        options = [o for o in turn.options if o in WEIGHTS]
        if not options:
            return None
        action = rng.choices(options, [WEIGHTS[o] for o in options])[0]
        size = None
        if action in ("bet", "raise") and hand.open_pair and not hand.big_made:
            size = rng.choice(("small", "big"))
        return Act(seat=seat, action=action, size=size)  # type: ignore[arg-type]

    async def step(self) -> Reply | None:
        """Refresh the mirror and send the next command (None: nothing to do now)."""
        await self.refresh()
        command = self.next_command()
        if command is None:
            return None
        reply = await self.request(command)
        if not reply.ok and reply.error is not None and reply.error.code == "must_show":
            self.must_show = getattr(command, "seat", None)
        else:
            self.must_show = None
        return reply


def chip_check(events: list[Any]) -> tuple[bool, str]:
    """Chips are conserved at every point between hands: bought = stacks + rake +
    cashed out. Also checks the events replay."""
    table = Table()
    bought = rake = cashed = 0
    hands = 0
    for event in events:
        table.apply(event)
        if isinstance(event, ChipsBought):
            bought += event.amount
        elif isinstance(event, HandEnded):
            rake += event.rake
            hands += 1
        elif isinstance(event, PlayerLeft):
            cashed += event.cashed_out
        if table.hand is None:
            stacks = sum(s.stack for s in table.seats.values())
            if bought != stacks + rake + cashed:
                return False, f"after event {table.version} ({type(event).__name__}): bought {bought} != stacks {stacks} + rake {rake} + cashed out {cashed}"
    return True, f"{hands} hands, {table.version} events, bought {bought}, rake {rake}"


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
    from ..store.event_store import PostgresEventStore
    from ..store.layout import store_of_table, store_schema
    from ..table.service import TableService

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
    client = TableClient(client_nc)
    drivers = [
        TableDriver(client, reader[store_of_table(f"b{run_id}t{k}", stores)], f"b{run_id}t{k}",
                    players=players, rng=random.Random(k))
        for k in range(tables)
    ]
    await asyncio.gather(*(d.setup() for d in drivers))
    for d in drivers:
        d.latencies.clear()
        d.sent = 0
    deadline = time.perf_counter() + seconds

    async def play(driver: TableDriver) -> None:
        while time.perf_counter() < deadline:
            if await driver.step() is None:
                await asyncio.sleep(0.001)

    started = time.perf_counter()
    await asyncio.gather(*(play(d) for d in drivers))
    elapsed = time.perf_counter() - started
    latencies = [x for d in drivers for x in d.latencies]
    sent = sum(d.sent for d in drivers)
    service_stats = [s.stats() for s in services]
    for service in services:
        await service.close()
    await client_nc.close()
    for nc in connections:
        await nc.close()
    ok = all(chip_check(s.load(d.table_id))[0] for d in drivers for s in [reader[store_of_table(d.table_id, stores)]])
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
        "errors": sum(len(d.errors) for d in drivers), "chips_conserved": ok,
    }


HELP = "commands/s of in-process table services over NATS, by number of stores"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tables", type=int, default=8, help="tables played at once (default 8)")
    parser.add_argument("--stores", type=int, nargs="+", default=[1, 2], help="store counts to compare (default 1 2)")
    parser.add_argument("--instances", type=int, default=1, help="table services (default 1)")
    parser.add_argument("--seconds", type=float, default=5.0, help="per configuration (default 5)")


def run(args: argparse.Namespace) -> int:

    from ..runtime.settings import Settings
    from ..runtime.embedded import servers

    env = Settings.from_env()
    with ExitStack() as stack:
        data_dir = Path(tempfile.mkdtemp(prefix="studroom-bench-"))
        stack.callback(shutil.rmtree, data_dir, True)
        settings = Settings(nats_url=env.nats_url, database_url=env.database_url, data_dir=data_dir)
        nats_url, database_url = stack.enter_context(servers(settings))
        for n in args.stores:
            result = asyncio.run(bench(nats_url, database_url, tables=args.tables, stores=n,
                                       seconds=args.seconds, instances=args.instances))
            print(json.dumps(result))
    return 0
