"""How fast does the ledger book a room's history?  Rebuilding the books from zero over
stored events (at least 100,000), beside the bare read of the same notification logs
in the same run (docs/design/benchmarks.md).

    studroom bench ledger [--events 100000] [--tables 16] [--stores 2]

The history is domain/simulate.py's simulated room (buy-ins and top-ups through the
cashier, players leaving between hands and during them, newcomers, timeouts, live
dealers), appended to real event stores by tools/stored_room.py.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Sequence

import psycopg
from psycopg import sql
from studroom.services.runtime.arguments import positive_int
from studroom.services.runtime.text import figures
from studroom.services.store.layout import store_schema
from studroom.services.store.postgres import PostgresEventStore

from ..stored_room import store_room
from .database import bench_database
from .projection_live import add_live_arguments

HELP = "ledger: events/s booked rebuilding the books from zero, beside the bare read of the stores"

BATCH = 2000                   # notifications read at a time (the ledger's batch)


def _bare_read(database_url: str, schemas: Sequence[str]) -> int:
    """Read every notification of the stores through the stores' own reader (the
    ledger's read, without booking): how many."""
    read = 0
    for schema in schemas:
        with PostgresEventStore(database_url, schema=schema, create_table=False) as store:
            position = 0
            while notes := store.read_notifications(position + 1, BATCH):
                read += len(notes)
                position = notes[-1].id
    return read


def bench(database_url: str, *, events: int, tables: int, stores: int) -> dict[str, float]:
    """Store a simulated room's history, then time the bare read of its notification
    logs and the books' rebuild from zero over it."""
    from studroom.projections.ledger.projector import Projector
    from studroom.projections.ledger.sources import cashier_source, table_sources

    prefix = f"bench_{uuid.uuid4().hex[:8]}"
    schemas = [store_schema(j, f"{prefix}_p") for j in range(stores)]
    cashier, books = f"{prefix}_cashier", f"{prefix}_ledger"
    results: dict[str, float] = {}
    try:
        started = time.perf_counter()
        stored = store_room(database_url, schemas, cashier, events=events, tables=tables)
        results["events stored (tables and cashier)"] = stored
        results["storing them: events/s"] = stored / (time.perf_counter() - started)
        started = time.perf_counter()
        read = _bare_read(database_url, [*schemas, cashier])
        results["baseline: bare read of the notification logs: events/s"] = read / (time.perf_counter() - started)
        with psycopg.connect(database_url, autocommit=True) as conn:
            sources = [*table_sources(conn, schemas=schemas), cashier_source(cashier)]
        projector = Projector(database_url, sources, ledger_schema=books)
        try:
            started = time.perf_counter()
            booked = projector.catch_up()
            results["ledger rebuild from zero: events/s"] = booked / (time.perf_counter() - started)
        finally:
            projector.close()
        with psycopg.connect(database_url, autocommit=True) as conn:
            results["entries booked"] = conn.execute(
                sql.SQL("SELECT count(*) FROM {}.entries").format(sql.Identifier(books))).fetchone()[0]  # type: ignore[index]
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            for schema in [*schemas, cashier, books]:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    return results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=positive_int, default=100_000, help="events to store and book (default 100000)")
    parser.add_argument("--tables", type=positive_int, default=16, help="simulated tables (default 16)")
    parser.add_argument("--stores", type=positive_int, default=2, help="table stores (default 2)")
    add_live_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if args.live:
        from .projection_live import run_live

        run_live("ledger", args.live_rate, args.live_seconds, args.live_idle)
        return 0
    with bench_database() as (database_url, where):
        print(f"ledger benchmark on {where}: {args.events:,} events, {args.tables} tables, {args.stores} stores")
        print(figures(bench(database_url, events=args.events, tables=args.tables, stores=args.stores)))
    return 0
