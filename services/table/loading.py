"""A table from the event store: its snapshot and the events after it, or all its
events; and the snapshot to store beside a table's new events.

Snapshots are the store's own (never published); one of another format than the
domain's (``snapshot.FORMAT``) is not even read, and one that does not restore is
logged and replaced by a full replay.  Why and how often: docs/design/event-store.md.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

import msgspec
from studroom.domain import snapshot
from studroom.domain.table import Table

from ..store.port import EventStore, Latest, Snapshot

log = logging.getLogger(__name__)

SNAPSHOT_EVERY = 100
"""Events between two snapshots of a table (0: no snapshots, every load replays)."""


class Loaded(NamedTuple):
    table: Table
    replayed: int       # events applied after the snapshot (all of them without one)


def load_table(store: EventStore, table_id: str, snapshots: bool = True) -> Loaded:
    """The table as stored: restored from its snapshot if it has one (and
    ``snapshots``), then the events after it applied."""
    return load_tables(store, [table_id], snapshots)[table_id]


def load_tables(store: EventStore, table_ids: Sequence[str], snapshots: bool = True) -> dict[str, Loaded]:
    """:func:`load_table` for several tables, in one read of the store."""
    found = store.load_latest(table_ids, snapshot.FORMAT if snapshots else None)
    return {table_id: _rebuilt(store, table_id, latest) for table_id, latest in found.items()}


def _rebuilt(store: EventStore, table_id: str, latest: Latest) -> Loaded:
    kept = latest.snapshot
    if kept is None:
        return Loaded(Table.replay(latest.events), len(latest.events))
    try:
        table = snapshot.restore(kept.state)
    except (msgspec.DecodeError, msgspec.ValidationError, AttributeError, KeyError, TypeError, ValueError):
        log.warning("the snapshot of table %s at version %d does not restore: replaying its events",
                    table_id, kept.version, exc_info=True)
    else:
        if table.version == kept.version:
            for event in latest.events:
                table.apply(event)
            return Loaded(table, len(latest.events))
        log.warning("the snapshot of table %s says version %d but holds %d: replaying its events",
                    table_id, kept.version, table.version)
    events = store.load(table_id)
    return Loaded(Table.replay(events), len(events))


def snapshot_due(every: int, before: int, after: int, replayed: int) -> bool:
    """Whether a table that went from version ``before`` to ``after`` (and had
    ``replayed`` events applied when loaded) should be stored with a snapshot: when it
    passed a multiple of ``every``, or its load replayed that many (no snapshot yet,
    or one of an old format)."""
    return every > 0 and after > before and (after // every > before // every or replayed >= every)


def snapshot_of(table_id: str, table: Table) -> Snapshot:
    return Snapshot(table_id, table.version, snapshot.FORMAT, snapshot.capture(table))
