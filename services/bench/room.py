"""How fast does the room play?  Bots over NATS against 1 and 2 table services and 1
and N stores, beside bare commits and NATS round trips measured in the same run (what
each row means: docs/design/benchmarks.md).

    studroom bench room [--seconds N] [--tables K] [--bots-per-table B] [--stores-n N]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..room.bots import Room
from ..room.plans import TablePlan, plan_tables, table_ids
from ..runtime.settings import Settings
from ..runtime.supervisor import Services, child_env
from ..store.inspect import events_stored
from ..store.layout import store_schemas
from .baselines import bare_commits_per_second, bare_nats_round_trips
from .cpu_time import CpuMeter


@dataclass
class Row:
    name: str
    instances: int
    stores: int
    seconds: float
    actions: int
    hands: int
    events: int
    errors: int
    p50: float
    p99: float
    problems: list[str]
    cpu: dict[str, float] = dataclasses.field(default_factory=dict)   # CPU seconds by part

    @property
    def actions_per_s(self) -> float:
        return self.actions / self.seconds if self.seconds else 0.0

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0

    @property
    def hands_per_s(self) -> float:
        return self.hands / self.seconds if self.seconds else 0.0


async def _play(nats_url: str, database_url: str, plans: list[TablePlan],
                schemas: list[str], seconds: float, cpu: CpuMeter, name: str, instances: int,
                stores: int) -> Row:
    """Start the bots, warm up for a second, then measure for ``seconds``."""
    room = Room(nats_url, plans, pace_ms=0, seed=1)
    try:
        await room.start()
        stats = room.stats
        await asyncio.sleep(1.0)                     # warm up
        before = await asyncio.to_thread(events_stored, database_url, schemas)
        actions, hands, errors = stats.actions, stats.hands, stats.errors
        stats.latencies.clear()
        cpu_before = cpu.sample()
        started = time.perf_counter()
        await asyncio.sleep(seconds)
        elapsed = time.perf_counter() - started
        cpu_after = cpu.sample()
        actions, hands, errors = stats.actions - actions, stats.hands - hands, stats.errors - errors
        p50, p99 = stats.latency_percentile(50), stats.latency_percentile(99)
        after = await asyncio.to_thread(events_stored, database_url, schemas)
        used = {k: cpu_after[k] - cpu_before.get(k, 0.0) for k in cpu_after}
        return Row(name, instances, stores, elapsed, actions, hands, after - before, errors,
                   p50, p99, [], used)
    finally:
        await room.stop()


def measure(nats_url: str, database_url: str, env: dict[str, str], log_dir: Path, *,
            instances: int, stores: int, tables: int, bots_per_table: int, seconds: float,
            prefix: str, data_dir: Path | None = None) -> Row:
    schemas = store_schemas(stores)
    ids = table_ids(tables, prefix=prefix)
    plans = plan_tables(ids, bots_per_table, {})
    name = f"{instances} service{'s' if instances > 1 else ''}, {stores} store{'s' if stores > 1 else ''}"
    services = Services(env, log_dir, instances=instances, stores=stores, name=prefix)
    services.start()
    try:
        row = asyncio.run(_play(nats_url, database_url, plans, schemas, seconds,
                                CpuMeter(services, data_dir), name, instances, stores))
        row.problems += services.dead()
    finally:
        problems = services.stop()
    row.problems += problems
    return row


def bench(settings: Settings, *, seconds: float, tables: int, bots_per_table: int,
          stores_n: int, out: IO[str] = sys.stdout) -> list[Row]:
    from ..runtime.servers import servers

    def say(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    temporary = None
    if settings.embedded_nats or settings.embedded_postgres:
        temporary = Path(tempfile.mkdtemp(prefix="studroom-bench-room-"))
        settings = dataclasses.replace(settings, data_dir=temporary)
    try:
        with servers(settings) as (nats_url, database_url):
            env = child_env(nats_url, database_url, settings.data_dir)
            log_dir = settings.data_dir / "logs" / "bench_room"
            say(f"bench room: {tables} tables x {bots_per_table} instant bots, {seconds:g} s per row")
            commit_rate = bare_commits_per_second(database_url, min(seconds, 5.0))
            nats_rate = asyncio.run(bare_nats_round_trips(nats_url, min(seconds, 5.0)))
            rows = []
            run_id = uuid.uuid4().hex[:4]
            for instances in (1, 2):
                for stores in sorted({1, stores_n}):
                    prefix = f"b{run_id}i{instances}s{stores}t"
                    say(f"  running: {instances} table service(s), {stores} store(s) ...")
                    rows.append(measure(
                        nats_url, database_url, env, log_dir, instances=instances, stores=stores,
                        tables=tables, bots_per_table=bots_per_table, seconds=seconds,
                        prefix=prefix, data_dir=settings.data_dir))
            report(rows, commit_rate, nats_rate, out)
            return rows
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def report(rows: list[Row], commit_rate: float, nats_rate: float, out: IO[str]) -> None:
    def say(text: str) -> None:
        out.write(text + "\n")

    say("")
    say(f"baseline: bare INSERT commits/s (psycopg, 1 connection) {commit_rate:10.0f}")
    say(f"          bare NATS request/reply round trips/s          {nats_rate:10.0f}")
    say("")
    header = (f"{'configuration':<22} {'actions/s':>10} {'p50 ms':>7} {'p99 ms':>7} "
              f"{'events/s':>9} {'hands/s':>8} {'errors':>6} {'÷ commits':>10} {'÷ NATS':>7}")
    say(header)
    say("-" * len(header))
    for row in rows:
        say(f"{row.name:<22} {row.actions_per_s:>10.0f} {row.p50 * 1000:>7.1f} "
            f"{row.p99 * 1000:>7.1f} {row.events_per_s:>9.0f} {row.hands_per_s:>8.1f} "
            f"{row.errors:>6} {row.actions_per_s / commit_rate:>10.2f} "
            f"{row.actions_per_s / nats_rate:>7.3f}")
        for problem in row.problems:
            say(f"    problem: {problem}")
    parts = [p for p in ("table service", "relay", "bots", "nats", "postgres")
             if any(p in r.cpu for r in rows)]
    if parts and any(r.cpu for r in rows):
        cores = os.cpu_count() or 1
        say("")
        say(f"CPU per action (ms) and machine use ({cores} CPUs), measured from /proc:")
        header = f"{'configuration':<22} " + " ".join(f"{p:>13}" for p in parts) + f" {'machine':>8}"
        say(header)
        say("-" * len(header))
        for row in rows:
            per = [row.cpu.get(p, 0.0) * 1000 / max(row.actions, 1) for p in parts]
            busy = sum(row.cpu.values()) / (row.seconds * cores) if row.seconds else 0.0
            say(f"{row.name:<22} " + " ".join(f"{v:>13.2f}" for v in per) + f" {busy:>7.0%}")
    best = max(rows, key=lambda r: r.actions_per_s)
    say("")
    say(f"goal: actions/s >= half the bare commit rate ({commit_rate / 2:.0f}): best "
        f"{best.actions_per_s:.0f} ({best.name}) -> {'met' if best.actions_per_s >= commit_rate / 2 else 'NOT met'}")
    p99_ok = [r.name for r in rows if r.p99 * 1000 <= 20]
    say(f"goal: p99 <= 20 ms: {'met by ' + ', '.join(p99_ok) if p99_ok else 'NOT met'}")
    out.flush()


HELP = "bots over NATS against 1/2 table services and 1/N stores, beside bare commits and round trips"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=10.0, help="per configuration (default 10)")
    parser.add_argument("--tables", type=int, default=16, help="tables played at once (default 16)")
    parser.add_argument("--bots-per-table", type=int, default=4, help="bots at each table (default 4)")
    parser.add_argument("--stores-n", type=int, default=4, help="N of the 1/N stores rows (default 4)")


def run(args: argparse.Namespace) -> int:
    rows = bench(Settings.from_env(), seconds=args.seconds, tables=args.tables,
                 bots_per_table=args.bots_per_table, stores_n=args.stores_n)
    return 0 if all(not r.problems for r in rows) else 1
