"""The ledger projection: the stores' notification logs into the books, exactly once.

A tracking projector (projections/tracking.py: one transaction per batch of a store,
its position with it) whose fold books each event's entries: a batch -> entries' rows,
each stream's book (:class:`.entries.TableBook`, :class:`.account_entries.CashierBook`)
the state kept between its events.  docs/design/ledger.md says more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from ..tracking import Batch, BeforeCommit, TrackingProjector
from . import schema
from .entries import Unbookable
from .sources import Source


class BookingFailed(Exception):
    """An event of a store could not be booked: the store's books stop before it."""


FindSources = Callable[[psycopg.Connection[Any]], list[Source]]
"""The sources as found on a connection to the database (e.g. :func:`.sources.all_sources`)."""


class Projector(TrackingProjector):
    """Books the events of ``sources`` (or of those ``sources`` finds, looked for again
    every few seconds) into the books in ``ledger_schema``."""

    name = "ledger"

    def __init__(self, database_url: str, sources: Sequence[Source] | FindSources, *,
                 ledger_schema: str = schema.LEDGER_SCHEMA, batch_size: int = 2000,
                 before_commit: BeforeCommit | None = None) -> None:
        super().__init__(database_url, schema.TABLES, ledger_schema, batch_size=batch_size,
                         before_commit=before_commit)
        self._find = sources
        self._sources: dict[str, Source] = {}

    def find_stores(self) -> list[str]:
        sources = self._find(self._connection()) if callable(self._find) else self._find
        self._sources = {s.name: s for s in sources}
        return list(self._sources)

    def state_type(self, store: str) -> type:
        return self._sources[store].bookkeeping.book_type

    def rows(self, batch: Batch) -> list[tuple[Any, ...]]:
        """The rows of the entries of a batch (updating the streams' books)."""
        entries_of = self._sources[batch.store].bookkeeping.entries
        rows: list[tuple[Any, ...]] = []
        for n in batch.notes:
            try:
                entries = entries_of(batch.states[n.stream_id], n.stream_id, n.event)
            except (Unbookable, KeyError, ValueError) as error:
                msg = (f"{batch.store} notification {n.id} ({n.stream_id} v{n.version}, "
                       f"{type(n.event).__name__}): {error}")
                raise BookingFailed(msg) from error
            for seq, e in enumerate(entries):
                rows.append((batch.store, n.id, seq, n.stream_id, n.version, e.kind, e.debit, e.credit, e.amount,
                             e.table, e.hand, e.player, e.at_ms))
        return rows
