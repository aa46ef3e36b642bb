"""Hands on the record: how fast are hands re-run and verified, and how fast is the
players' history rebuilt from zero?  Each beside a baseline of the same run
(docs/design/history.md, "Figures"):

- ``verify``: finished hands a second through ``studroom verify``'s check (every
  command re-run through the rules and compared, the deck audited), beside the bare
  replay of the same streams (``Table.replay``: applying the stored events);
- ``history rebuild``: events a second the history projection folds into the players'
  rows from zero (PostgreSQL, one transaction a batch), beside the bare read of the
  same notification log in batches of the same size.

    studroom bench history [--hands 3000] [--events 100000] [--tables 16]

The room is domain/simulate.py's simulated room: random legal moves at tables of the
three games, every command from its sender with his ids and the service's clock, the
cashier's buy-ins, the timer's timeouts, players arriving and leaving (between hands
and during them), players' entropy with their antes (R32), and live dealers' tables (R28).
"""

from __future__ import annotations

import argparse
import time
import uuid

import psycopg
from psycopg import sql
from studroom.domain.events import Event
from studroom.domain.hands import spans
from studroom.domain.simulate import play_room
from studroom.domain.table import Table
from studroom.services.runtime.arguments import positive_int
from studroom.services.runtime.text import figures

from .database import bench_database
from .projection_live import add_live_arguments

HELP = "history: hands verified/s (re-run + deck audit) beside bare replay; history rebuild events/s beside bare reads"

BATCH = 2000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hands", type=positive_int, default=3000, help="hands to verify (default 3000)")
    parser.add_argument("--events", type=positive_int, default=100_000, help="stored events to rebuild from (default 100000)")
    parser.add_argument("--tables", type=positive_int, default=16, help="tables of the simulated room (default 16)")
    add_live_arguments(parser)


def verify_rates(streams: dict[str, list[Event]]) -> dict[str, float]:
    from studroom.services.disputes.checks import check_table

    finished = {t: [s for s in spans(events) if s.end is not None] for t, events in streams.items()}
    hands = sum(len(s) for s in finished.values())
    started = time.perf_counter()
    for events in streams.values():
        Table.replay(events)
    bare = time.perf_counter() - started
    started = time.perf_counter()
    different = sum(not check.consistent for t, events in streams.items() for check in check_table(events, finished[t]))
    checked = time.perf_counter() - started
    if different:
        raise AssertionError(f"{different} simulated hands do not verify")
    return {"hands": hands, "bare replay (Table.replay): hands/s": hands / bare,
            "verify (re-run every command + deck audit): hands/s": hands / checked}


def rebuild_rates(database_url: str, streams: dict[str, list[Event]]) -> dict[str, float]:
    from studroom.projections.history.projector import Projector
    from studroom.services.store.postgres import PostgresEventStore

    prefix = f"bench_{uuid.uuid4().hex[:8]}_"
    store_schema, history = f"{prefix}p0", f"{prefix}history"
    try:
        with PostgresEventStore(database_url, schema=store_schema) as store:
            for table_id, events in streams.items():
                for start in range(0, len(events), BATCH):
                    store.append([(table_id, start, events[start:start + BATCH])])
            total = store.max_notification_id()
            started = time.perf_counter()
            position = 0
            while notes := store.read_notifications(position + 1, BATCH):
                position = notes[-1].id
            bare = time.perf_counter() - started
        projector = Projector(database_url, [store_schema], history_schema=history, batch_size=BATCH)
        try:
            started = time.perf_counter()
            projected = projector.catch_up()
            rebuilt = time.perf_counter() - started
        finally:
            projector.close()
        assert projected == total, (projected, total)
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            for name in (store_schema, history):
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
    return {"events": total, "bare read of the notification log: events/s": total / bare,
            "history rebuild from zero: events/s": total / rebuilt}


def run(args: argparse.Namespace) -> int:
    if args.live:
        from .projection_live import run_live

        run_live("history", args.live_rate, args.live_seconds, args.live_idle)
        return 0
    print(f"verify: a simulated room of {args.tables} tables, {args.hands} hands")
    print(figures(verify_rates(play_room(args.tables, rounds=args.hands, prefix="bench").tables)))
    with bench_database() as (database_url, _):
        print(f"history rebuild: a simulated room of {args.tables} tables, {args.events} events")
        print(figures(rebuild_rates(database_url, play_room(args.tables, events=args.events, prefix="bench").tables)))
    return 0
