"""How fast does the room play?  Bots over NATS against 1 and 2 table services and 1
and N stores, with NATS authorization on and off, beside bare commits and NATS round
trips measured in the same run (what each row means: docs/design/benchmarks.md).

    studroom bench room [--seconds N] [--tables K] [--bots-per-table B] [--stores-n N]
                        [--auth on|off|both]
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from studroom.services.auth.authority import Authority, room_authority
from studroom.services.room.bots import Room
from studroom.services.room.plans import (
    MAX_BOTS_PER_TABLE,
    TablePlan,
    plan_tables,
    table_ids,
)
from studroom.services.runtime.arguments import int_range, positive_float, positive_int
from studroom.services.runtime.processes.supervisor import Services, child_env
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.settings import Settings
from studroom.services.runtime.text import rate, table
from studroom.services.store.inspect import events_stored
from studroom.services.store.layout import store_schemas

from .baselines import bare_commits_per_second, bare_nats_round_trips
from .cpu_time import CpuMeter

OPEN = "open"          # the folder of the open NATS ("auth off"), in the bench's data folder


@dataclass
class Row:
    name: str
    auth: bool
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
    def label(self) -> str:
        return f"{self.name}, auth {'on' if self.auth else 'off'}"

    @property
    def actions_per_s(self) -> float:
        return self.actions / self.seconds if self.seconds else 0.0

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0

    @property
    def hands_per_s(self) -> float:
        return self.hands / self.seconds if self.seconds else 0.0


@dataclass
class Nats:
    """The NATS server of a row: with authorization (its Authority) or open."""

    url: str
    authority: Authority | None
    home: Path                     # its folder (pid file: CPU time)

    @property
    def auth(self) -> bool:
        return self.authority is not None


async def _play(nats: Nats, database_url: str, plans: list[TablePlan],
                schemas: list[str], seconds: float, cpu: CpuMeter, name: str, instances: int,
                stores: int) -> Row:
    """Start the bots, warm up for a second, then measure for ``seconds``."""
    room = Room(nats.url, plans, authority=nats.authority, pace_ms=0, seed=1)
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
        return Row(name, nats.auth, instances, stores, elapsed, actions, hands, after - before,
                   errors, p50, p99, [], used)
    finally:
        await room.stop()


def measure(nats: Nats, database_url: str, data_dir: Path, *, instances: int, stores: int,
            tables: int, bots_per_table: int, seconds: float, prefix: str) -> Row:
    schemas = store_schemas(stores)
    ids = table_ids(tables, prefix=prefix)
    plans = plan_tables(ids, bots_per_table, {})
    name = f"{instances} service{'s' if instances > 1 else ''}, {stores} store{'s' if stores > 1 else ''}"
    services = Services(child_env(nats.url, database_url, data_dir), data_dir / "logs" / "bench_room",
                        instances=instances, stores=stores, name=prefix, authority=nats.authority)
    services.start()
    try:
        row = asyncio.run(_play(nats, database_url, plans, schemas, seconds,
                                CpuMeter(services, data_dir, nats.home), name, instances, stores))
        row.problems += services.dead()
    finally:
        problems = services.stop()
    row.problems += problems
    return row


def bench(settings: Settings, *, seconds: float, tables: int, bots_per_table: int,
          stores_n: int, auth: tuple[bool, ...] = (True, False), out: IO[str] = sys.stdout) -> list[Row]:
    """The rows, each configuration with authorization on and off (``auth``) one after
    the other.  NATS is always embedded here: one server in operator mode and one open
    (which also gives the bare round trips); PostgreSQL is the settings'."""
    from studroom.services.runtime.servers.external_or_embedded import servers

    def say(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    temporary = Path(tempfile.mkdtemp(prefix="studroom-bench-room-"))
    settings = dataclasses.replace(settings, nats_url=None, nats_creds=None, data_dir=temporary)
    try:
        with servers(settings) as (secure_url, database_url), \
                EmbeddedNats(temporary / OPEN, auth=False) as open_nats:
            servers_of = {True: Nats(secure_url, room_authority(temporary), temporary / "nats"),
                          False: Nats(open_nats.url, None, open_nats.home)}
            say(f"bench room: {tables} tables x {bots_per_table} instant bots, {seconds:g} s per row, "
                f"authorization {' and '.join('on' if a else 'off' for a in auth)}")
            commit_rate = bare_commits_per_second(database_url, min(seconds, 5.0))
            nats_rate = asyncio.run(bare_nats_round_trips(open_nats.url, min(seconds, 5.0)))
            rows = []
            run_id = uuid.uuid4().hex[:4]
            for instances in (1, 2):
                for stores in sorted({1, stores_n}):
                    for on in auth:
                        prefix = f"b{run_id}i{instances}s{stores}{'a' if on else 'o'}t"
                        say(f"  running: {instances} table service(s), {stores} store(s), "
                            f"auth {'on' if on else 'off'} ...")
                        rows.append(measure(
                            servers_of[on], database_url, temporary, instances=instances,
                            stores=stores, tables=tables, bots_per_table=bots_per_table,
                            seconds=seconds, prefix=prefix))
            report(rows, commit_rate, nats_rate, out)
            return rows
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def report(rows: list[Row], commit_rate: float, nats_rate: float, out: IO[str]) -> None:
    def say(text: str) -> None:
        out.write(text + "\n")

    say("")
    say(f"baseline: bare INSERT commits (psycopg, 1 connection) {rate(commit_rate)}")
    say(f"          bare NATS request/reply round trips          {rate(nats_rate)}")
    say("")
    header = ["configuration", "actions/s", "p50 ms", "p99 ms", "events/s", "hands/s", "errors", "÷ commits", "÷ NATS"]
    say(table(header, [[row.label, round(row.actions_per_s), row.p50 * 1000, row.p99 * 1000, round(row.events_per_s),
                        round(row.hands_per_s), row.errors, f"{row.actions_per_s / commit_rate:.2f}",
                        f"{row.actions_per_s / nats_rate:.3f}"] for row in rows], right=("÷ commits", "÷ NATS")))
    for row in rows:
        for problem in row.problems:
            say(f"{row.label}: problem: {problem}")
    _report_cpu(rows, say)
    _report_cost_of_authorization(rows, say)
    room = [r for r in rows if r.auth] or rows          # the goals are the room's: auth on
    best = max(room, key=lambda r: r.actions_per_s)
    say("")
    say(f"goal: actions/s >= half the bare commit rate ({rate(commit_rate / 2)}): best "
        f"{rate(best.actions_per_s)} ({best.label}) -> {'met' if best.actions_per_s >= commit_rate / 2 else 'NOT met'}")
    p99_ok = [r.label for r in room if r.p99 * 1000 <= 20]
    say(f"goal: p99 <= 20 ms: {'met by ' + ', '.join(p99_ok) if p99_ok else 'NOT met'}")
    out.flush()


def _report_cpu(rows: list[Row], say: Callable[[str], None]) -> None:
    parts = [p for p in ("table service", "relay", "bots", "nats", "postgres")
             if any(p in r.cpu for r in rows)]
    if not parts:
        return
    cores = os.cpu_count() or 1
    say("")
    say(f"CPU per action in µs and machine use ({cores} CPUs), measured from /proc:")
    per_action = [[row.label, *(round(row.cpu.get(p, 0.0) * 1e6 / max(row.actions, 1)) for p in parts),
                   f"{sum(row.cpu.values()) / (row.seconds * cores) if row.seconds else 0.0:.0%}"] for row in rows]
    say(table(["configuration", *parts, "machine"], per_action, right=("machine",)))


def _report_cost_of_authorization(rows: list[Row], say: Callable[[str], None]) -> None:
    """Each configuration with authorization on beside the same without it."""
    off = {(r.instances, r.stores): r for r in rows if not r.auth}
    pairs = [(r, off[r.instances, r.stores]) for r in rows if r.auth and (r.instances, r.stores) in off]
    if not pairs:
        return
    say("")
    say("the cost of authorization (operator mode, per-user permissions, senders checked):")
    compared = []
    for on, bare in pairs:
        change = on.actions_per_s / bare.actions_per_s - 1 if bare.actions_per_s else float("nan")
        compared.append([on.name, round(on.actions_per_s), round(bare.actions_per_s), f"{change:+.0%}",
                         on.p99 * 1000, bare.p99 * 1000])
    say(table(["configuration", "actions/s on", "off", "change", "p99 ms on", "off"], compared, right=("change",)))

HELP = ("bots over NATS against 1/2 table services and 1/N stores, authorization on and off, "
        "beside bare commits and round trips")

AUTH_MODES = {"on": (True,), "off": (False,), "both": (True, False)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=positive_float, default=10.0, help="per configuration (default 10)")
    parser.add_argument("--tables", type=positive_int, default=16, help="tables played at once (default 16)")
    parser.add_argument("--bots-per-table", type=int_range(2, MAX_BOTS_PER_TABLE), default=4, help="bots at each table (default 4)")
    parser.add_argument("--stores-n", type=positive_int, default=4, help="N of the 1/N stores rows (default 4)")
    parser.add_argument("--auth", choices=sorted(AUTH_MODES), default="both",
                        help="NATS authorization on, off or both side by side (default both)")


def run(args: argparse.Namespace) -> int:
    rows = bench(Settings.from_env(), seconds=args.seconds, tables=args.tables,
                 bots_per_table=args.bots_per_table, stores_n=args.stores_n, auth=AUTH_MODES[args.auth])
    return 0 if all(not r.problems for r in rows) else 1
