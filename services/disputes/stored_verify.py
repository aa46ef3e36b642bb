"""``studroom verify`` over the event stores: each table read in one query, decoded in
one call, checked in one re-run (verify.py), in worker processes when given more than
one.

A table is the unit of work: the largest go first, and each worker process (spawned:
its own connection, nothing shared with the parent but the arguments and the verdict)
takes the next table when it is done with one, so two cores share the stores whatever
their number.  A verdict carries back only the hands that differ.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec
import psycopg
from studroom.domain.events import TableEvent

from ..runtime.servers.attach import OTHER_SERVERS
from ..store.inspect import stores_on, stream_json, stream_lengths
from ..store.layout import STORE_SCHEMA_PREFIX, store_schema
from .marks import Mark
from .stored_events import NoSuchTable
from .verify import Period, TableVerdict, verify_table

_DECODE = msgspec.json.Decoder(list[TableEvent]).decode    # type: ignore[valid-type]


class Job(NamedTuple):
    """One stored table to verify: its store, its id, its events."""

    schema: str
    table_id: str
    events: int


def jobs(conn: psycopg.Connection[Any], table_id: str | None = None, prefix: str = STORE_SCHEMA_PREFIX) -> list[Job]:
    """Every stored table (or only ``table_id``: NoSuchTable if no store holds it),
    the largest first."""
    found = [Job(schema, stream, events)
             for schema in (store_schema(i, prefix) for i in stores_on(conn, prefix))
             for stream, events in stream_lengths(conn, schema).items() if table_id in (None, stream)]
    if table_id is not None and not found:
        raise NoSuchTable(f"no event store holds a table {table_id!r}")
    return sorted(found, key=lambda job: -job.events)


def verify_stored(database_url: str, work: Sequence[Job], period: Period, marks: Mapping[str, Mark], *,
                  workers: int = 1, on_progress: Callable[[int], None] | None = None) -> Iterator[TableVerdict]:
    """The verdict of every table of ``work`` (in the order they are done); ``on_progress``
    is told each table's events when it is done."""
    tasks = [(job, period, marks.get(job.table_id)) for job in work]
    if workers <= 1 or len(tasks) <= 1:
        _open(database_url)
        try:
            yield from _told(map(_check, tasks), on_progress)
        finally:
            _close()
        return
    with multiprocessing.get_context("spawn").Pool(min(workers, len(tasks)), _open,
                                                   (database_url, list(OTHER_SERVERS))) as pool:
        yield from _told(pool.imap_unordered(_check, tasks), on_progress)


def _told(verdicts: Iterator[TableVerdict], on_progress: Callable[[int], None] | None) -> Iterator[TableVerdict]:
    for verdict in verdicts:
        if on_progress is not None:
            on_progress(verdict.events)
        yield verdict


_connection: psycopg.Connection[Any] | None = None     # the process's own, for its tables


def _open(database_url: str, other_servers: Sequence[str] = ()) -> None:
    """This process's connection; ``other_servers``: the stores' servers its parent
    attached to (a spawned worker knows only its environment's)."""
    global _connection
    OTHER_SERVERS.extend(url for url in other_servers if url not in OTHER_SERVERS)
    if _connection is None or _connection.closed:
        _connection = psycopg.connect(database_url, autocommit=True)


def _close() -> None:
    global _connection
    if _connection is not None:
        _connection.close()
    _connection = None


def _check(task: tuple[Job, Period, Mark | None]) -> TableVerdict:
    job, period, mark = task
    assert _connection is not None
    stream = _DECODE(stream_json(_connection, job.schema, job.table_id))
    return verify_table(job.table_id, stream, period, mark)
