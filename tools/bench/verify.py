"""Does ``studroom verify`` keep up with the room?  Hands a second verified over stored
hands (read from PostgreSQL, decoded, every command re-run, the deck's proofs checked),
on one worker process and on two, beside the domain's own rate of playing the same
hands in the same run; and where one worker's time goes (cProfile), split into
reading, decoding, re-running, hashing and proofs, and the rest
(docs/design/history.md, "Figures").

    studroom bench verify [--hands 20000] [--tables 16] [--stores 2] [--profile]

The room is domain/simulate.py's simulated room, written to real event stores by
tools/stored_room.py: rooms of :data:`ROOM_HANDS` hands, one seed after the other
(their tables named apart), until enough hands are stored.  Short rooms because the
simulator now stops, after some thousands of hands, on a move the rules refuse
(``DomainError: seat 2 may fold, check; not bet``): such a room is kept as far as it
was stored (its unfinished hand is not verified).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
import uuid
from collections.abc import Mapping

import psycopg
from psycopg import sql
from studroom.domain.hands import spans
from studroom.domain.simulate import play_room
from studroom.services.runtime.arguments import positive_int
from studroom.services.runtime.text import figures
from studroom.services.store.layout import store_schema

from ..stored_room import store_room
from .database import bench_database

HELP = "verify: stored hands verified/s on 1 and 2 worker processes, beside the domain playing them; a profile split"

ROOM_HANDS = 2500
EVENTS_PER_HAND = 80           # about, in the simulated room: to store enough events for --hands


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hands", type=positive_int, default=20_000, help="hands to store and verify (default 20000)")
    parser.add_argument("--tables", type=positive_int, default=16, help="tables of the simulated room (default 16)")
    parser.add_argument("--stores", type=positive_int, default=2, help="event stores (default 2)")
    parser.add_argument("--profile", action="store_true", help="also profile one worker and split its time")


def play_rate(tables: int) -> float:
    """The domain playing one simulated room of :data:`ROOM_HANDS` hands (no store): hands/s."""
    started = time.perf_counter()
    room = play_room(tables, events=ROOM_HANDS * EVENTS_PER_HAND, prefix="bench")
    seconds = time.perf_counter() - started
    return sum(1 for stream in room.tables.values() for s in spans(stream) if s.end is not None) / seconds


def store_rooms(database_url: str, schemas: list[str], cashier: str, *, hands: int, tables: int) -> None:
    """Simulated rooms of :data:`ROOM_HANDS` hands, one seed after the other, until
    about ``hands`` hands' events are stored."""
    stored, seed = 0, 0
    while stored < hands * EVENTS_PER_HAND:
        seed += 1
        stored += store_room(database_url, schemas, cashier, events=ROOM_HANDS * EVENTS_PER_HAND, tables=tables,
                             seed=seed, prefix=f"bench{seed}")


def timed_verify(database_url: str, prefix: str, workers: int) -> tuple[int, float]:
    """Verify every stored table (no marks): (hands, seconds)."""
    from studroom.services.disputes.stored_verify import jobs, verify_stored
    from studroom.services.disputes.verify import Period, summarize

    started = time.perf_counter()
    with psycopg.connect(database_url, autocommit=True) as conn:
        work = jobs(conn, prefix=prefix)
    summary = summarize(verify_stored(database_url, work, Period(), {}, workers=workers))
    seconds = time.perf_counter() - started
    if summary.different:
        raise AssertionError(f"{len(summary.different)} simulated hands do not verify")
    return summary.hands, seconds


SPLIT = {   # where a function's own time goes, by its file or name (first match wins)
    "reading (PostgreSQL)": ("psycopg", "stream_json", "stream_lengths", "{method 'execute'", "socket", "select."),
    "decoding (msgspec)": ("Decoder' objects", "msgspec"),
    "hashing and proofs (R32)": ("commitment", "audit.py", "hashlib", "_hashlib", "'root' of"),
    "re-running (rules, causes, clocks)": ("studroom/domain", "services/disputes", "Table' objects", "isinstance",
                                           "setattr", "fullmatch", "command_ids", "authority"),
}


def profile_split(database_url: str, prefix: str) -> dict[str, float]:
    """One worker's time, split (% of the whole): :data:`SPLIT`, the rest is the rest."""
    profiler = cProfile.Profile()
    profiler.enable()
    timed_verify(database_url, prefix, workers=1)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    shares = dict.fromkeys([*SPLIT, "the rest"], 0.0)
    total = 0.0
    for (path, _line, name), (_calls, _primitive, own, _cumulative, _callers) in stats.items():
        where = f"{path} {name}"
        part = next((part for part, marks in SPLIT.items() if any(m in where for m in marks)), "the rest")
        shares[part] += own
        total += own
    return {f"profile: {part} %": 100 * own / total for part, own in shares.items()}


def bench(database_url: str, *, hands: int, tables: int, stores: int, profile: bool) -> Mapping[str, float]:
    prefix = f"bench_{uuid.uuid4().hex[:8]}_p"
    schemas = [store_schema(j, prefix) for j in range(stores)]
    cashier = f"{prefix}cashier"
    try:
        store_rooms(database_url, schemas, cashier, hands=hands, tables=tables)
        results: dict[str, float] = {"domain playing the room (no store): hands/s": play_rate(tables)}
        for workers in (1, 2):
            checked, seconds = timed_verify(database_url, prefix, workers)
            results["hands verified"] = checked
            results[f"verify, {workers} worker process{'es' if workers > 1 else ''}: hands/s"] = checked / seconds
        if profile:
            results |= profile_split(database_url, prefix)
        return results
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            for schema in [*schemas, cashier]:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def run(args: argparse.Namespace) -> int:
    print(f"verify: a simulated room of {args.tables} tables in {args.stores} stores, about {args.hands} hands")
    with bench_database() as (database_url, where):
        print(f"PostgreSQL: {where}")
        print(figures(bench(database_url, hands=args.hands, tables=args.tables, stores=args.stores,
                            profile=args.profile)))
    return 0
