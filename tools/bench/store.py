"""How fast can one event store commit?  ``PostgresEventStore.append`` one event per
call, 32 streams per call, and from 4 threads, beside bare INSERT commits measured in
the same run; and how long a long table takes to load, by a full replay and from its
snapshot (:mod:`.loading`; docs/design/benchmarks.md).

    studroom bench store [--seconds 3] [--load-events 100000]
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from collections.abc import Callable

import msgspec
import psycopg
from psycopg import sql
from studroom.services.runtime.arguments import int_range, positive_float
from studroom.services.runtime.text import figures
from studroom.services.store.postgres import PostgresEventStore

from .baselines import bare_commits_per_second
from .database import bench_database
from .loading import load_times


class BenchEvent(msgspec.Struct, frozen=True, tag="bench"):
    seat: int
    amount: int
    note: str = "ante"


def _rate(run: Callable[[], int], seconds: float) -> float:
    """Items per second of ``run`` (which returns items done per call)."""
    run()  # warm up (prepared statements, pool)
    done, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        done += run()
    return done / elapsed


def bench(database_url: str, seconds: float) -> dict[str, float]:
    results: dict[str, float] = {}
    schema = f"bench_{uuid.uuid4().hex[:8]}"

    results["bare INSERT commits/s (1 connection)"] = bare_commits_per_second(database_url, seconds)

    with PostgresEventStore(database_url, schema=schema, pool_size=8) as store:
        versions: dict[str, int] = {}
        lock = threading.Lock()

        def take(stream: str, n: int = 1) -> int:
            with lock:
                before = versions.get(stream, 0)
                versions[stream] = before + n
                return before

        counter = iter(range(10**12))

        def single() -> int:
            stream = f"table-{next(counter) % 32}"
            store.append([(stream, take(stream), [BenchEvent(1, 5)])])
            return 1

        results["append, 1 event per call: events/s"] = _rate(single, seconds)

        def batched() -> int:
            batch = []
            for i in range(32):
                stream = f"batch-table-{i}"
                batch.append((stream, take(stream), [BenchEvent(i, 5)]))
            store.append(batch)
            return 32

        results["append, 32 streams per call: events/s"] = _rate(batched, seconds)

        def threaded() -> int:
            per_thread = 50
            threads = [
                threading.Thread(
                    target=lambda t=t: [
                        store.append([(f"thr-{t}", take(f"thr-{t}"), [BenchEvent(t, 5)])])
                        for _ in range(per_thread)
                    ]
                )
                for t in range(4)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            return 4 * per_thread

        results["append, 1 event per call, 4 threads: events/s"] = _rate(threaded, seconds)

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
    return results


HELP = "event-store appends per second, beside bare INSERT commits"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=positive_float, default=3.0, help="per measurement (default 3)")
    parser.add_argument("--load-events", type=int_range(0), default=100_000,
                        help="events of the table loaded with and without its snapshot (default 100000; 0: skip)")


def run(args: argparse.Namespace) -> int:
    with bench_database() as (database_url, where):
        with psycopg.connect(database_url) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
            fsync = conn.execute("SHOW fsync").fetchone()[0]  # type: ignore[index]
            sync_commit = conn.execute("SHOW synchronous_commit").fetchone()[0]  # type: ignore[index]
        print(f"PostgreSQL {version} ({where}); fsync={fsync}, synchronous_commit={sync_commit}")
        print(figures(bench(database_url, args.seconds)))
        if args.load_events > 0:
            print(figures(load_times(database_url, args.load_events)))
    return 0
