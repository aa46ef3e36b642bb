"""The history projection: the table stores' notification logs into the players'
histories, exactly once, rebuildable.

A tracking projector (projections/tracking.py: one transaction per batch of a store,
its position with it) whose fold folds each event into its table's state (rows.py) and
writes the rows of every hand that ended.  A hand that began before the batch is read
back from its store (the record itself) unless this projector read its beginning: the
events of the hands still running are the fold's memory between batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from studroom.domain.events import Event
from studroom.services.store.inspect import stores_on
from studroom.services.store.layout import STORE_SCHEMA_PREFIX, store_schema

from ..tracking import Batch, BeforeCommit, TrackingProjector
from . import schema
from .rows import HandRow, TableState, follow, hand_rows


class Projector(TrackingProjector):
    """Projects the table stores (``stores``: their schemas; None: every store found)
    into the histories in ``history_schema``."""

    name = "history"

    def __init__(self, database_url: str, stores: Sequence[str] | None = None, *,
                 history_schema: str = schema.HISTORY_SCHEMA, batch_size: int = 2000,
                 store_prefix: str = STORE_SCHEMA_PREFIX, before_commit: BeforeCommit | None = None) -> None:
        super().__init__(database_url, schema.TABLES, history_schema, batch_size=batch_size,
                         before_commit=before_commit)
        self.store_prefix = store_prefix
        self._fixed = None if stores is None else list(stores)

    def find_stores(self) -> list[str]:
        if self._fixed is not None:
            return self._fixed
        return [store_schema(index, self.store_prefix) for index in stores_on(self._connection(), self.store_prefix)]

    def state_type(self, store: str) -> type:
        return TableState

    def rows(self, batch: Batch) -> list[tuple[Any, ...]]:
        """The rows of the hands that end in a batch (updating the tables' states and
        the events of the hands still running, the memory: per table, by version)."""
        rows: list[tuple[Any, ...]] = []
        for n in batch.notes:
            events: dict[int, Event] = batch.memory.setdefault(n.stream_id, {})
            events[n.version] = n.event
            state = batch.states[n.stream_id]
            start = follow(state, n.version, n.event)
            if start is not None:
                hand = _hand(batch.reader, n.stream_id, start, n.version, events)
                rows += [_columns(batch.store, row) for row in hand_rows(state, hand, n.version)]
            if state.hand_start is None:
                del batch.memory[n.stream_id]
        return rows


def _hand(store: Any, table_id: str, start: int, end: int, seen: dict[int, Event]) -> list[Event]:
    """A hand's events, versions ``start..end``: as carried and read, or from the store
    when the hand began before what this projector read."""
    if start in seen:
        return [seen[v] for v in range(start, end + 1)]
    return list(store.load(table_id, after_version=start - 1)[: end - start + 1])


def _columns(store_name: str, row: HandRow) -> tuple[Any, ...]:
    r = row.result
    return (row.player, row.table_id, row.hand_no, store_name, row.version, row.played_ms, row.game, row.small_bet,
            row.big_bet, row.ante, row.seat, row.session, r.start_stack, r.end_stack, r.net, r.won, r.pots_won,
            r.rake_paid, r.showdown, msgspec.json.encode(row.record))
