"""The ledger projection: the stores' notification logs into the books, exactly once.

One batch of one store is one transaction on the books' database: lock the store's
position row (``SELECT ... FOR UPDATE``), read the notifications after it with the
store's own reader, book their entries (``COPY``), write the streams' states and the
new position, commit.  A projector killed mid-batch leaves nothing of the batch; the
next one (or another instance) starts again from the committed position.  Several
instances are safe: the row lock lets one book a store's batch at a time, and each
re-reads the position it locked (a stream's state cached in memory is used only while
the position it was cached at is still the committed one).

Sync code (psycopg); the service runs it in a thread (bootstrap.py).
docs/design/ledger.md says more.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import psycopg
from psycopg import sql
from studroom.services.store.port import Notification
from studroom.services.store.postgres import PostgresEventStore

from . import schema
from .entries import Unbookable
from .sources import Source, open_store, store_exists

log = logging.getLogger(__name__)

BeforeCommit = Callable[[Source, int], None]
"""A fault hook (tests): called with the source and the number of rows written, just
before the batch commits."""


class BookingFailed(Exception):
    """An event of a store could not be booked: the store's books stop before it."""


class Projector:
    """Books the events of ``sources`` into the books in ``ledger_schema``."""

    def __init__(self, database_url: str, sources: Sequence[Source], *, ledger_schema: str = schema.LEDGER_SCHEMA,
                 batch_size: int = 2000, before_commit: BeforeCommit | None = None) -> None:
        self.database_url = database_url
        self.sources = list(sources)
        self.ledger_schema = ledger_schema
        self.batch_size = batch_size
        self.before_commit = before_commit
        self.booked = 0                                  # events booked by this projector
        self._conn: psycopg.Connection[Any] | None = None
        self._stores: dict[str, PostgresEventStore] = {}
        self._cache: dict[str, tuple[int, dict[str, Any]]] = {}
        s = sql.Identifier(ledger_schema)
        self._claim = sql.SQL("INSERT INTO {}.positions (store, position) VALUES (%s, 0) "
                              "ON CONFLICT (store) DO NOTHING").format(s)
        self._lock = sql.SQL("SELECT position FROM {}.positions WHERE store = %s FOR UPDATE").format(s)
        self._advance = sql.SQL("UPDATE {}.positions SET position = %s WHERE store = %s").format(s)
        self._load = sql.SQL("SELECT stream, state FROM {}.books WHERE store = %s AND stream = ANY(%s)").format(s)
        self._save = sql.SQL("INSERT INTO {}.books (store, stream, state) VALUES (%s, %s, %s) "
                             "ON CONFLICT (store, stream) DO UPDATE SET state = EXCLUDED.state").format(s)
        self._copy = sql.SQL("COPY {}.entries ({}) FROM STDIN").format(
            s, sql.SQL(", ").join(map(sql.Identifier, schema.COLUMNS)))

    def step(self) -> int:
        """Book one batch of every source: the number of events booked."""
        return sum(self.book_batch(source) for source in self.sources)

    def catch_up(self) -> int:
        """Book until every source is booked to its end: the number of events booked."""
        total = 0
        while booked := self.step():
            total += booked
        return total

    def book_batch(self, source: Source) -> int:
        """Book the next batch of one store in one transaction: the number of events."""
        store = self._store(source)
        if store is None:
            return 0
        conn = self._connection()
        try:
            with conn.transaction():
                conn.execute(self._claim, (source.name,))
                (position,) = conn.execute(self._lock, (source.name,)).fetchone()  # type: ignore[misc]
                notes = store.read_notifications(position + 1, self.batch_size)
                if not notes:
                    return 0
                books = self._books(conn, source, position, notes)
                rows = _rows(source, books, notes)
                with conn.cursor().copy(self._copy) as copy:
                    for row in rows:
                        copy.write_row(row)
                touched = {n.stream_id for n in notes}
                conn.cursor().executemany(self._save, [(source.name, stream, msgspec.json.encode(books[stream]))
                                                       for stream in sorted(touched)])
                conn.execute(self._advance, (notes[-1].id, source.name))
                if self.before_commit is not None:
                    self.before_commit(source, len(rows))
        except BaseException:
            self._cache.pop(source.name, None)
            if self._conn is not None and self._conn.broken:
                self.close()
            raise
        self._cache[source.name] = (notes[-1].id, books)
        self.booked += len(notes)
        return len(notes)

    def _books(self, conn: psycopg.Connection[Any], source: Source, position: int,
               notes: list[Notification]) -> dict[str, Any]:
        """Each stream's state before the batch: cached if the cache is as of ``position``,
        else as the books hold it (a new stream starts empty)."""
        cached_at, books = self._cache.get(source.name, (-1, {}))
        if cached_at != position:
            books = {}
        missing = sorted({n.stream_id for n in notes} - books.keys())
        if missing:
            book_type = source.bookkeeping.book_type
            for stream, state in conn.execute(self._load, (source.name, missing)).fetchall():
                books[stream] = msgspec.json.decode(state, type=book_type)
            for stream in missing:
                books.setdefault(stream, book_type())
        return books

    def _store(self, source: Source) -> PostgresEventStore | None:
        """The source's reader, once its store exists."""
        store = self._stores.get(source.name)
        if store is None and store_exists(self._connection(), source.schema):
            store = self._stores[source.name] = open_store(self.database_url, source.schema)
        return store

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.database_url, autocommit=True)
            schema.create(self._conn, self.ledger_schema)
        return self._conn

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        self._cache.clear()


def _rows(source: Source, books: dict[str, Any], notes: list[Notification]) -> list[tuple[Any, ...]]:
    """The rows of the entries of a batch (updating the streams' states)."""
    entries_of = source.bookkeeping.entries
    name = source.name
    rows: list[tuple[Any, ...]] = []
    for n in notes:
        try:
            entries = entries_of(books[n.stream_id], n.stream_id, n.event)
        except (Unbookable, KeyError, ValueError) as error:
            msg = f"{name} notification {n.id} ({n.stream_id} v{n.version}, {type(n.event).__name__}): {error}"
            raise BookingFailed(msg) from error
        for seq, e in enumerate(entries):
            rows.append((name, n.id, seq, n.stream_id, n.version, e.kind, e.debit, e.credit, e.amount,
                         e.table, e.hand, e.player, e.at_ms))
    return rows
