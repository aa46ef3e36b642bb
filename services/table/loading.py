"""A table from the event store: its snapshot and the events after it, or all its
events; and the snapshot to store beside a table's new events.

Snapshots are the store's own (never published); one of another format than the
domain's (``snapshot.FORMAT``) is not even read, and one that does not restore is
logged and replaced by a full replay.  Why and how often: docs/design/event-store.md.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import msgspec
from studroom.domain import snapshot
from studroom.domain.table import Table

from ..store.port import EventStore, Snapshot

log = logging.getLogger(__name__)

SNAPSHOT_EVERY = 100
"""Events between two snapshots of a table (0: no snapshots, every load replays)."""


class Loaded(NamedTuple):
    table: Table
    replayed: int       # events applied after the snapshot (all of them without one)


def load_table(store: EventStore, table_id: str, snapshots: bool = True) -> Loaded:
    """The table as stored: restored from its snapshot if it has one (and
    ``snapshots``), then the events after it applied."""
    found = store.load_snapshot(table_id, snapshot.FORMAT) if snapshots else None
    if found is not None:
        try:
            table = snapshot.restore(found.state)
        except (msgspec.DecodeError, msgspec.ValidationError, KeyError, TypeError, ValueError):
            log.warning("the snapshot of table %s at version %d does not restore: replaying its events",
                        table_id, found.version, exc_info=True)
        else:
            if table.version == found.version:
                tail = store.load(table_id, after_version=found.version)
                for event in tail:
                    table.apply(event)
                return Loaded(table, len(tail))
            log.warning("the snapshot of table %s says version %d but holds %d: replaying its events",
                        table_id, found.version, table.version)
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
