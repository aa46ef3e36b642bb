"""The ledger's or the history's projector following a live room: CPU per event and
idle, and how far it stays behind, for several ways of running it side by side in the
same run (docs/design/projections.md, "Cost").

A simulated room (domain/simulate.py) is appended to real event stores at a steady
rate, a command's few events per append (tables interleaved, the accounts' events in
the cashier's store), while the projector runs in a child process of its own, as
``studroom serve ledger`` / ``serve history`` run it.  Measured per row: the child's
CPU and that of its PostgreSQL backends (found by their ``application_name``) per
1,000 events appended, then the same with nobody appending (idle, % of a core), and
the lag: for each look (every 0.1 s), how long until the projection held what the
stores held then.  Rows alternate between the settings compared, twice each.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import psycopg
from psycopg import sql
from studroom.domain.account import stream_id as account_stream
from studroom.domain.simulate import simulated_room
from studroom.services.runtime.arguments import positive_int
from studroom.services.runtime.observability.stats import percentile
from studroom.services.store.postgres import PostgresEventStore
from studroom.tools.room_cpu import read_processes, tree_seconds

EVENTS_PER_APPEND = 3          # about a command's events (the public stream's 3 events per action)
LOOK_EVERY_S = 0.1             # how often the lag is looked at
WARM_UP_S = 2.0                # appending before a row is measured


@dataclass
class Row:
    setting: str
    events: int = 0
    seconds: float = 0.0
    projector_s: float = 0.0           # the child's CPU seconds while appending
    backends_s: float = 0.0            # its PostgreSQL backends'
    idle_seconds: float = 0.0
    idle_projector_s: float = 0.0
    idle_backends_s: float = 0.0
    behind: list[float] = field(default_factory=list)

    def figures(self) -> dict[str, float]:
        per = 1e6 / self.events if self.events else 0.0          # CPU s per event -> ms per 1,000 events
        return {
            "events/s appended": self.events / self.seconds,
            "projector: CPU ms / 1,000 events": self.projector_s * per,
            "its PostgreSQL backends: CPU ms / 1,000 events": self.backends_s * per,
            "idle: projector % of a core": 100 * self.idle_projector_s / self.idle_seconds,
            "idle: its backends % of a core": 100 * self.idle_backends_s / self.idle_seconds,
            "behind the stores p50 ms": 1000 * percentile(self.behind, 50) if self.behind else 0.0,
            "behind the stores p99 ms": 1000 * percentile(self.behind, 99) if self.behind else 0.0,
        }


def add_live_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--live`` flags ``bench ledger`` and ``bench history`` share."""
    parser.add_argument("--live", action="store_true",
                        help="instead: the projector following a live room, polling as before beside its pace "
                             "and NOTIFY (CPU per event, idle, lag; tools/bench/projection_live.py)")
    parser.add_argument("--live-rate", type=positive_int, default=2000, help="--live: events/s appended (default 2000)")
    parser.add_argument("--live-seconds", type=positive_int, default=20, help="--live: seconds measured (default 20)")
    parser.add_argument("--live-idle", type=positive_int, default=20, help="--live: idle seconds measured (default 20)")


def _chunks(tables: int) -> Iterator[tuple[str, list[Any], dict[str, list[Any]]]]:
    """The simulated room a few events at a time, its tables interleaved: (table, its
    events, the accounts' events that came with them)."""
    for played in simulated_room(tables, seed=7, prefix="live"):
        events = list(played.events)
        first = True
        while events:
            chunk, events[:] = events[:EVENTS_PER_APPEND], events[EVENTS_PER_APPEND:]
            yield played.table_id, chunk, (played.accounts if first else {})
            first = False


class _Appender:
    def __init__(self, url: str, table_schema: str, cashier_schema: str) -> None:
        self.tables = PostgresEventStore(url, schema=table_schema, pool_size=1, max_overflow=0)
        self.cashier = PostgresEventStore(url, schema=cashier_schema, pool_size=1, max_overflow=0)
        self.versions: dict[str, int] = {}

    def _batch(self, stream: str, events: list[Any]) -> tuple[str, int, list[Any]]:
        before = self.versions.get(stream, 0)
        self.versions[stream] = before + len(events)
        return stream, before, events

    def append(self, table: str, events: list[Any], accounts: Mapping[str, list[Any]]) -> int:
        moves = [self._batch(account_stream(p), e) for p, e in accounts.items() if e]
        if moves:
            self.cashier.append(moves)
        self.tables.append([self._batch(table, events)])
        return len(events) + sum(len(e) for _, _, e in moves)

    def close(self) -> None:
        self.tables.close()
        self.cashier.close()


def _child(kind: str, url: str, schemas: tuple[str, str, str], run_kwargs: dict[str, Any]) -> None:
    """The projector as its service runs it, until SIGTERM."""
    import asyncio

    table_schema, cashier_schema, model = schemas
    if kind == "ledger":
        from studroom.projections.ledger.projector import Projector as Ledger
        from studroom.projections.ledger.sources import Source, TABLES, cashier_source
        projector: Any = Ledger(url, [Source(table_schema, TABLES), cashier_source(cashier_schema)], ledger_schema=model)
    else:
        from studroom.projections.history.projector import Projector as History
        projector = History(url, [table_schema], history_schema=model)

    async def main() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        try:
            await projector.run(stop, **run_kwargs)
        finally:
            projector.close()

    asyncio.run(main())


def _cpu(pid: int, backends: Sequence[int]) -> tuple[float, float]:
    processes = read_processes()
    return tree_seconds(pid, processes), sum(tree_seconds(b, processes) for b in backends)


def _backends(conn: psycopg.Connection[Any], name: str) -> list[int]:
    return [pid for (pid,) in conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                                           (name,)).fetchall()]


def _position(conn: psycopg.Connection[Any], model: str) -> int:
    try:
        row = conn.execute(sql.SQL("SELECT coalesce(sum(position), 0) FROM {}.positions").format(
            sql.Identifier(model))).fetchone()
    except psycopg.errors.UndefinedTable:
        return 0
    return int(row[0]) if row else 0


def _seconds_behind(samples: list[tuple[float, int, int]]) -> list[float]:
    """For each look (time, stored, projected): how long until the projection held
    what the stores held then."""
    out = []
    for i, (when, stored, _) in enumerate(samples):
        later = next((t for t, _, done in samples[i:] if done >= stored), None)
        if later is not None:
            out.append(later - when)
    return out


def run_row(url: str, kind: str, setting: str, run_kwargs: dict[str, Any], *, rate: float, seconds: float,
            idle: float, tables: int) -> Row:
    """One row: fresh stores and read model, the projector in a child, appends at
    ``rate`` events/s for ``seconds`` (after a warm-up), then ``idle`` seconds."""
    prefix = f"live_{uuid.uuid4().hex[:8]}"
    schemas = (f"{prefix}_p0", f"{prefix}_cashier", f"{prefix}_{kind}")
    app = f"bench_{prefix}"
    appender = _Appender(url, schemas[0], schemas[1])
    chunks = _chunks(tables)
    appender.append(*next(chunks))
    context = multiprocessing.get_context("spawn")
    child = context.Process(target=_child, args=(kind, f"{url}?application_name={app}" if "?" not in url
                                                 else f"{url}&application_name={app}", schemas, run_kwargs))
    child.start()
    row = Row(setting)
    assert child.pid is not None
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            stored = 1
            deadline = time.monotonic() + 60
            while _position(conn, schemas[2]) < 1:                   # started and caught up once
                if time.monotonic() > deadline or not child.is_alive():
                    raise RuntimeError(f"the {kind} projector did not start")
                time.sleep(0.1)
            samples: list[tuple[float, int, int]] = []
            started = time.monotonic()
            measured_from = started + WARM_UP_S
            appended = cpu_before = None
            next_look = started
            for table, events, accounts in chunks:
                now = time.monotonic()
                if now >= measured_from + seconds:
                    break
                if cpu_before is None and now >= measured_from:
                    cpu_before, appended = _cpu(child.pid, _backends(conn, app)), stored
                if now >= next_look:
                    samples.append((now, appender_total(appender), _position(conn, schemas[2])))
                    next_look = now + LOOK_EVERY_S
                stored += appender.append(table, events, accounts)
                wait = started + stored / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            assert cpu_before is not None and appended is not None
            projector, backends = _cpu(child.pid, _backends(conn, app))
            row.events, row.seconds = stored - appended, seconds
            row.projector_s, row.backends_s = projector - cpu_before[0], backends - cpu_before[1]
            total = appender_total(appender)
            end = time.monotonic() + 30
            while (done := _position(conn, schemas[2])) < total and time.monotonic() < end:
                samples.append((time.monotonic(), total, done))
                time.sleep(LOOK_EVERY_S / 2)
            samples.append((time.monotonic(), total, _position(conn, schemas[2])))
            row.behind = _seconds_behind(samples)
            time.sleep(1.0)
            pids = _backends(conn, app)
            before = _cpu(child.pid, pids)
            time.sleep(idle)
            after = _cpu(child.pid, pids)
            row.idle_seconds = idle
            row.idle_projector_s, row.idle_backends_s = after[0] - before[0], after[1] - before[1]
    finally:
        if child.pid is not None and child.is_alive():
            os.kill(child.pid, signal.SIGTERM)
        child.join(10)
        appender.close()
        with psycopg.connect(url, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    return row


def appender_total(appender: _Appender) -> int:
    """The notifications appended so far, both stores (ids run 1.. in a fresh store)."""
    return sum(appender.versions.values())


def compare(url: str, kind: str, settings: Mapping[str, dict[str, Any]], *, rate: float, seconds: float,
            idle: float, tables: int, rounds: int = 2) -> dict[str, list[Row]]:
    """Each setting ``rounds`` times, alternated: its rows."""
    rows: dict[str, list[Row]] = {name: [] for name in settings}
    for _ in range(rounds):
        for name, run_kwargs in settings.items():
            rows[name].append(run_row(url, kind, name, run_kwargs, rate=rate, seconds=seconds, idle=idle,
                                      tables=tables))
    return rows


def summary(rows: Mapping[str, list[Row]]) -> list[list[Any]]:
    """A table: a line per figure, a column per row."""
    names = list(next(iter(rows.values()))[0].figures())
    header = ["measured", *[f"{name} #{i + 1}" for name, rs in rows.items() for i in range(len(rs))]]
    lines = [header]
    for figure in names:
        lines.append([figure, *[round(r.figures()[figure], 2) for rs in rows.values() for r in rs]])
    return lines



SETTINGS: Final = {
    "polling (0.2 s, as before)": {"idle_s": 0.2},
    "pace 0.5 s + NOTIFY (the services')": {"idle_s": 5.0, "pace_s": 0.5, "listen": True},
}


def run_live(kind: str, rate: float, seconds: float, idle: float) -> None:
    """``bench ledger --live`` / ``bench history --live``: the settings side by side."""
    from studroom.services.runtime.text import table

    from .database import bench_database

    with bench_database() as (url, where):
        print(f"{kind} following a live room on {where}: {rate:.0f} events/s, {seconds:.0f} s, idle {idle:.0f} s")
        lines = summary(compare(url, kind, SETTINGS, rate=rate, seconds=seconds, idle=idle, tables=16))
        print(table(lines[0], lines[1:]))
