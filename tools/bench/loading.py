"""What snapshots buy (docs/design/event-store.md): loading one long table, and the
table service's commands/s once the active tables outnumber its cache.

* :func:`load_times`: a table of ``events`` simulated events, loaded by a full
  replay and from its snapshot and tail (``bench store --load-events``);
* :func:`active_tables`: a :class:`CommandHandler` (no NATS) on PostgreSQL, one
  command per table round the ``counts`` tables (SitOut toggles, so that every
  command is legal and appends), with and without snapshots; the baseline is the
  smallest count, whose tables all stay cached (``bench table --active``).
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import msgspec
import psycopg
from psycopg import sql
from studroom.domain import snapshot
from studroom.domain.commands import SitOut
from studroom.domain.events import Event, TableEvent, TableOpened
from studroom.domain.simulate import new_table, play_hand, top_up
from studroom.domain.table import Table
from studroom.services.store.codec import register_event_types
from studroom.services.store.port import Snapshot
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.table.command_handling import CommandHandler
from studroom.services.table.loading import SNAPSHOT_EVERY, load_table
from studroom.services.table.request_decoding import Submission

CHUNK = 5_000          # events per append while filling the store


@contextmanager
def _fresh_store(database_url: str) -> Iterator[PostgresEventStore]:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    register_event_types(TableEvent)
    store = PostgresEventStore(database_url, schema=schema, pool_size=2, max_overflow=2)
    try:
        yield store
    finally:
        store.close()
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def _history(min_events: int, seed: int = 1) -> tuple[Table, list[Event]]:
    """A table with at least ``min_events`` events of random hands, between hands."""
    rng = random.Random(seed)
    table, events = new_table("seven_card_stud", 4)
    while len(events) < min_events:
        events += play_hand(table, rng) + top_up(table, 2000)
    return table, events


def _renamed(events: list[Event], table_id: str) -> list[Event]:
    first = events[0]
    assert isinstance(first, TableOpened)
    return [msgspec.structs.replace(first, table_id=table_id), *events[1:]]


def _median_ms(run: Callable[[], Any], times: int) -> float:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent) * 1000


def load_times(database_url: str, events: int = 100_000) -> dict[str, float]:
    """ms to load a table of ``events`` events: full replay, snapshot + tail."""
    table, history = _history(events)
    tail = SNAPSHOT_EVERY // 2                          # a typical distance from the last snapshot
    at = Table.replay(history[: len(history) - tail])
    with _fresh_store(database_url) as store:
        for start in range(0, len(history), CHUNK):
            store.append([("long", start, history[start : start + CHUNK])])
        store.append([], [Snapshot("long", at.version, snapshot.FORMAT, snapshot.capture(at))])
        full = _median_ms(lambda: load_table(store, "long", snapshots=False), 3)
        snapped = _median_ms(lambda: load_table(store, "long"), 20)
        assert load_table(store, "long").table.state() == table.state()
    return {
        f"table of {len(history):,} events: load by full replay, ms": full,
        f"table of {len(history):,} events: load from snapshot + {tail} events, ms": snapped,
    }


def _fill(store: PostgresEventStore, tables: int, history: list[Event], template: Table) -> list[str]:
    """``tables`` tables with the same history, each with its snapshot."""
    ids = [f"a{k}" for k in range(tables)]
    per_append = max(1, CHUNK // len(history))
    for start in range(0, tables, per_append):
        chunk = ids[start : start + per_append]
        kept = []
        for table_id in chunk:
            template.table_id = table_id
            kept.append(Snapshot(table_id, template.version, snapshot.FORMAT, snapshot.capture(template)))
        store.append([(t, 0, _renamed(history, t)) for t in chunk], kept)
    return ids


def _commands_per_s(handler: CommandHandler, out: dict[str, bool], seconds: float, batch: int) -> float:
    """SitOut toggles of seat 0 (``out``: whether it sits out now, by table), ``batch``
    tables per append, round all the tables."""
    ids = list(out)

    def one_round(limit: float) -> int:
        done = 0
        for start in range(0, len(ids), batch):
            items = []
            for table_id in ids[start : start + batch]:
                out[table_id] = not out[table_id]
                items.append(Submission(table_id, SitOut(seat=0, sitting_out=out[table_id])))
            replies = handler.handle_batch(items)
            assert all(r.reply.ok for r in replies), replies[0]
            done += len(items)
            if time.perf_counter() > limit:
                break
        return done

    if len(ids) <= handler.cache_size:                  # warm up: every table cached
        one_round(float("inf"))
    done, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        done += one_round(started + seconds)
    return done / elapsed


def active_tables(database_url: str, counts: Sequence[int] = (1_000, 20_000), seconds: float = 10.0,
                  history_events: int = 250, cache_size: int = 10_000, batch: int = 32) -> list[dict[str, Any]]:
    """commands/s by number of active tables (each with ``history_events`` events of
    history and its snapshot), without snapshots (every load replays) and with."""
    template, history = _history(history_events)
    rows = []
    for tables in counts:
        with _fresh_store(database_url) as store:
            out = dict.fromkeys(_fill(store, tables, history, template), False)
            for snapshots in (False, True):       # without first: it stores no snapshots
                handler = CommandHandler(store, auto_start=False, cache_size=cache_size,
                                         snapshot_every=SNAPSHOT_EVERY if snapshots else 0)
                rate = _commands_per_s(handler, out, seconds, batch)
                stats = handler.stats
                rows.append({
                    "tables": tables, "snapshots": snapshots, "cache_size": cache_size,
                    "history_events": len(history), "commands_per_s": round(rate, 1),
                    "loads_per_command": round(stats.loads / max(stats.commands, 1), 2),
                    "events_replayed_per_load": round(stats.replayed / max(stats.loads, 1), 1),
                })
    return rows
