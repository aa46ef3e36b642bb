"""The room as it runs, measured whole (issue 20; docs/design/benchmarks.md): every
service ``studroom room`` runs (table service(s), relay, timer, cashier, lobby, history,
ledger) as child processes, instant bots in this process, and the CPU of each process
per action from ``/proc``, beside the bare commits and NATS round trips of the same run.

    studroom bench room [--tables 4,16,64] [--layouts 1x1,2x2,2x2x2] [--seconds 30] [--idle 15]
                        [--bots-per-table B] [--auth on|off|both]

A layout is instances x stores [x PostgreSQL servers] (default 1 server).  Each row has
servers of its own: a database of its own on each of the run's PostgreSQL servers it
uses (its layout and where its stores live recorded on the first, its home, so that 1
and 2 stores never meet) and a NATS server of its own (its streams, consumers and
buckets start empty).  In each row the floor opens the
tables, the row measures ``--idle`` seconds of CPU with nobody seated, then the bots sit
down and play; after a warm-up the row measures ``--seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import psycopg
from psycopg import sql

from studroom import domain
from studroom.services.client.discovery import ask_all, key_counters
from studroom.services.client.table import TableClient
from studroom.services.room.bots import FLOOR, Room, open_table
from studroom.services.room.plans import MAX_BOTS_PER_TABLE, TablePlan, plan_tables, table_ids
from studroom.services.runtime.arguments import int_range, positive_float
from studroom.services.runtime.processes import process
from studroom.services.runtime.processes.supervisor import Services, child_env
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.store.inspect import events_stored
from studroom.services.store.layout import check_recorded_layout, store_schemas
from studroom.services.warden.connections import watching
from studroom.services.wire import subjects

from .baselines import bare_commits_per_second, bare_nats_round_trips
from .cpu_time import CpuMeter, pid_from, split
from .room_progress import RowProgress
from .room_rows import Layout, Row, report

__all__ = ["MAX_BOTS_PER_TABLE", "bench"]

WARM_UP = 2.0           # seconds of play before a row is measured
SETTLE = 2.0            # seconds between the tables' opening and the idle window
OPEN_WITHIN = 120.0     # seconds for the services to start and open every table (a loaded machine)
BASELINE_SECONDS = 5.0
STATS_WAIT = 0.5        # seconds the table services have to answer $SRV.STATS
TABLE_SERVICE = "studroom-table"


@dataclasses.dataclass(frozen=True)
class Options:
    tables: tuple[int, ...]
    layouts: tuple[Layout, ...]
    auth: tuple[bool, ...]
    seconds: float
    idle: float
    bots_per_table: int

    def rows(self) -> list[Row]:
        return [Row(tables, layout, on) for layout in self.layouts for tables in self.tables for on in self.auth]


async def _play(row: Row, nats_url: str, database_url: str, nats: EmbeddedNats, plans: list[TablePlan],
                meter: CpuMeter, options: Options, progress: RowProgress) -> None:
    """Open the tables, measure them idle, then seat the bots and measure their play."""
    authority = nats.authority
    async with contextlib.AsyncExitStack() as stack:
        if authority is not None:           # as the room: the warden caps each identity's connections
            await stack.enter_async_context(watching(nats_url, authority))
        floor_nc = await process.connect(nats_url, "studroom-bench-floor",
                                         creds=None if authority is None else authority.ensure("operator", FLOOR))
        stack.push_async_callback(floor_nc.drain)
        floor = TableClient(floor_nc, "operator", FLOOR)
        deadline = time.monotonic() + OPEN_WITHIN
        for done, plan in enumerate(plans):
            progress.phase(f"opening tables {done}/{len(plans)}", step=done > 0)
            await open_table(floor, plan, deadline)
            plan.reused = True              # the bots' room waits for it to answer, does not open it again
        if options.idle:
            progress.phase("settling")
            await asyncio.sleep(SETTLE)
            before = meter.sample()
            started = time.perf_counter()
            await progress.wait("idle, nobody seated", options.idle)
            row.idle_cpu, _ = split(before, meter.sample())
            row.idle_seconds = time.perf_counter() - started
        progress.phase("seating the bots")
        room = Room(nats_url, plans, authority=authority, pace_ms=0, seed=1)
        try:
            await room.start(open_timeout=OPEN_WITHIN)
            stats = room.stats
            await progress.wait("warming up", WARM_UP)
            schemas = store_schemas(row.layout.stores)
            events = await asyncio.to_thread(events_stored, database_url, schemas)
            actions, hands, errors, messages = stats.actions, stats.hands, stats.errors, stats.public_messages
            stats.latencies.clear()
            commands, commits = await group_commits(floor_nc)
            counted = await asyncio.to_thread(nats.counters)
            before = meter.sample()
            started = time.perf_counter()
            await progress.wait("playing", options.seconds, lambda: stats.actions - actions)
            after = meter.sample()
            row.seconds = time.perf_counter() - started
            now = await asyncio.to_thread(nats.counters)
            row.nats_in, row.nats_out = now["in_msgs"] - counted["in_msgs"], now["out_msgs"] - counted["out_msgs"]
            now_commands, now_commits = await group_commits(floor_nc)
            row.commands, row.commits = now_commands - commands, now_commits - commits
            row.actions, row.hands = stats.actions - actions, stats.hands - hands
            row.errors = stats.errors - errors
            row.messages = stats.public_messages - messages
            row.p50, row.p99 = stats.latency_percentile(50), stats.latency_percentile(99)
            row.cpu, row.machine = split(before, after)
            row.events = await asyncio.to_thread(events_stored, database_url, schemas) - events
        finally:
            progress.phase("stopping")
            await room.stop()


async def group_commits(nc: Any) -> tuple[int, int]:
    """The commands and the group commits (batches) of every table-service instance so
    far, from their counters (``$SRV.STATS``): the commands a commit carries, the group
    commit's whole point, and what more instances or stores cost it."""
    answers = await ask_all(nc, subjects.DISCOVERY_STATS, STATS_WAIT)
    counters = [key_counters(a) for a in answers if a.get("name") == TABLE_SERVICE]
    return (int(sum(c.get("commands", 0) for c in counters)),
            int(sum(c.get("table_batches", 0) for c in counters)))


@contextlib.contextmanager
def _databases(servers: list[EmbeddedPostgres], database: str) -> Iterator[list[str]]:
    """A database named ``database`` on each server, its URL each (dropped on exit)."""
    made: list[EmbeddedPostgres] = []
    try:
        for server in servers:
            with psycopg.connect(server.url, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            made.append(server)
        yield [server.url_for(database) for server in servers]
    finally:
        for server in made:
            with contextlib.suppress(psycopg.Error), psycopg.connect(server.url, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(database)))


def elsewhere(layout: Layout, urls: list[str]) -> dict[int, str]:
    """Where the stores not at home live: store ``j`` on server ``j % servers`` (as
    ``studroom room --db-servers``), ``urls[0]`` being home."""
    return {j: urls[j % layout.servers] for j in range(layout.stores) if j % layout.servers}


def measure(row: Row, postgres: list[EmbeddedPostgres], folder: Path, options: Options,
            progress: RowProgress) -> None:
    """One row on a database of its own on each server it uses (the first is home) and
    a NATS server of its own; its problems in ``row.problems``."""
    servers = postgres[:row.layout.servers]
    with _databases(servers, f"bench_{folder.name}") as urls:
        database_url, stores_elsewhere = urls[0], elsewhere(row.layout, urls)
        progress.phase("starting NATS and the services")
        with EmbeddedNats(folder, auth=row.auth, monitor=True) as nats:
            services = Services(child_env(nats.url, database_url, folder, stores_elsewhere), folder / "logs",
                                instances=row.layout.instances, stores=row.layout.stores, timers=True,
                                authority=nats.authority)
            try:
                # the layout and each store's server recorded once, before the services race to
                check_recorded_layout(database_url, row.layout.stores, urls=stores_elsewhere)
                services.start()
                meter = CpuMeter(services, pid_from(nats.home / "nats.pid"),
                                 *(pid_from(server.pgdata / "postmaster.pid") for server in servers))
                plans = plan_tables(table_ids(row.tables), options.bots_per_table, {})
                asyncio.run(_play(row, nats.url, database_url, nats, plans, meter, options, progress))
            except Exception as error:       # one row failing (a service refused, ...) is reported, the rest run
                row.problems.append(f"{type(error).__name__}: {error}")
            finally:
                row.problems += services.dead()
                progress.phase("stopping the services")
                row.problems += services.stop()


def bench(options: Options, out: IO[str] = sys.stdout) -> list[Row]:
    """Every row, on embedded servers in a temporary folder (removed afterwards): one
    PostgreSQL for the run (a database per row), a NATS server per row, and an open
    one for the bare round trips."""
    def say(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    rows = options.rows()
    temporary = Path(tempfile.mkdtemp(prefix="studroom-bench-room-"))
    try:
        with contextlib.ExitStack() as stack:
            postgres = stack.enter_context(EmbeddedPostgres(temporary))
            open_nats = stack.enter_context(EmbeddedNats(temporary / "open", auth=False))
            more = max(layout.servers for layout in options.layouts) - 1
            servers = [postgres, *(stack.enter_context(EmbeddedPostgres(temporary, folder=f"postgres-{i}"))
                                   for i in range(1, more + 1))]
            say(f"bench room: {len(rows)} row(s): tables {', '.join(map(str, options.tables))}; instances x stores "
                f"[x PostgreSQL servers] "
                f"{', '.join(map(str, options.layouts))}; authorization "
                f"{' and '.join('on' if a else 'off' for a in options.auth)}; {options.bots_per_table} instant bots "
                f"a table; {options.idle:g} s idle, {WARM_UP:g} s warm-up, {options.seconds:g} s measured a row")
            say(f"this machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; "
                f"the domain {'compiled' if domain.COMPILED else 'in pure Python (not compiled, or stale)'}")
            commit_rate = bare_commits_per_second(postgres.url, BASELINE_SECONDS)
            nats_rate = asyncio.run(bare_nats_round_trips(open_nats.url, BASELINE_SECONDS))
            say(f"baselines: bare commits {commit_rate:,.0f}/s, bare NATS round trips {nats_rate:,.0f}/s")
            for number, row in enumerate(rows, 1):
                with RowProgress(f"row {number}/{len(rows)}: {row.label}", out) as progress:
                    measure(row, servers, temporary / f"row{number}", options, progress)
                say(f"row {number}/{len(rows)}: {row.label}: {row.actions_per_s:,.0f} actions/s, "
                    f"server CPU {row.server_ms:.2f} ms/action, load average {os.getloadavg()[0]:.1f}"
                    + (" (problems)" if row.problems else ""))
            report(rows, commit_rate, nats_rate, out)
            return rows
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


HELP = ("the room as it runs (every service, bots), CPU per action of each process from /proc, "
        "beside bare commits and NATS round trips; an idle row")

AUTH_MODES = {"on": (True,), "off": (False,), "both": (True, False)}


def _list_of(kind: Any, name: str) -> Any:
    def parse(text: str) -> tuple[Any, ...]:
        try:
            values = tuple(kind(part) for part in text.split(",") if part.strip())
        except ValueError:
            values = ()
        if not values:
            raise argparse.ArgumentTypeError(f"{name}: a list separated by commas, not {text!r}")
        return values
    return parse


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(value)
    return number


def _layout(value: str) -> Layout:
    layout = Layout.parse(value)
    if layout.instances < 1 or layout.stores < 1 or layout.servers < 1:
        raise ValueError(value)
    if layout.servers > layout.stores:
        raise argparse.ArgumentTypeError(f"--layouts {value}: more PostgreSQL servers than stores "
                                         f"(store j lives on server j % servers)")
    return layout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tables", type=_list_of(_positive, "--tables"), default=(16,),
                        help="tables played at once, a row each: e.g. 4,16,64 (default 16)")
    parser.add_argument("--layouts", type=_list_of(_layout, "--layouts"), default=(Layout(1, 1),),
                        help="instances x stores [x PostgreSQL servers, default 1], a row each: "
                             "e.g. 1x1,2x2,2x2x2 (default 1x1)")
    parser.add_argument("--seconds", type=positive_float, default=30.0, help="measured per row (default 30)")
    parser.add_argument("--idle", type=_non_negative, default=15.0,
                        help="seconds of CPU measured with the tables open and nobody seated, per row; 0: none (default 15)")
    parser.add_argument("--bots-per-table", type=int_range(2, MAX_BOTS_PER_TABLE), default=4,
                        help="bots at each table (default 4)")
    parser.add_argument("--auth", choices=sorted(AUTH_MODES), default="on",
                        help="NATS authorization on (as the room runs), off, or both side by side (default on)")


def _non_negative(value: str) -> float:
    number = float(value)
    if not number >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return number


def run(args: argparse.Namespace) -> int:
    options = Options(tables=args.tables, layouts=args.layouts, auth=AUTH_MODES[args.auth], seconds=args.seconds,
                      idle=args.idle, bots_per_table=args.bots_per_table)
    rows = bench(options)
    return 0 if all(not r.problems for r in rows) else 1

