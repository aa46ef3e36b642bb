"""The history projection: the table stores' notification logs into the players'
histories, exactly once, rebuildable.

One batch of one store is one transaction on the history's database: lock the store's
position row (``SELECT ... FOR UPDATE``), read the notifications after it with the
store's reader, fold them into each table's state (rows.py), write the rows of every
hand that ended, the tables' states and the new position, commit.  A projector killed
mid-batch leaves nothing of the batch behind; the next one (or another instance)
starts again from the committed position, and the row lock lets one instance at a
time project a store.  A hand that began before the batch is read back from its
store (the record itself) unless this projector read its beginning.  Sync code (psycopg): the service runs it in a thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import psycopg
from psycopg import sql
from studroom.domain.events import Event
from studroom.services.store.inspect import open_stores, stores_found
from studroom.services.store.layout import STORE_SCHEMA_PREFIX, store_schema
from studroom.services.store.port import Notification

from . import schema
from .rows import HandRow, TableState, follow, hand_rows

log = logging.getLogger(__name__)

BeforeCommit = Callable[[str, int], None]
"""A fault hook (tests): called with the store's schema and the rows written, just
before the batch commits."""

DISCOVER_EVERY_S = 5.0           # how often new event stores are looked for


class Projector:
    """Projects the table stores (``stores``: their schemas; None: every store found)
    into the histories in ``history_schema``."""

    def __init__(self, database_url: str, stores: Sequence[str] | None = None, *,
                 history_schema: str = schema.HISTORY_SCHEMA, batch_size: int = 2000,
                 store_prefix: str = STORE_SCHEMA_PREFIX, before_commit: BeforeCommit | None = None) -> None:
        self.database_url = database_url
        self.history_schema = history_schema
        self.batch_size = batch_size
        self.store_prefix = store_prefix
        self.before_commit = before_commit
        self.projected = 0                               # events projected by this projector
        self._fixed = list(stores) if stores is not None else None
        self._found: list[str] = []
        self._found_at = float("-inf")
        self._conn: psycopg.Connection[Any] | None = None
        self._stores: dict[str, Any] = {}
        self._cache: dict[str, tuple[int, dict[str, TableState], Carried]] = {}
        s = sql.Identifier(history_schema)
        self._claim = sql.SQL("INSERT INTO {}.positions (store, position) VALUES (%s, 0) "
                              "ON CONFLICT (store) DO NOTHING").format(s)
        self._lock = sql.SQL("SELECT position FROM {}.positions WHERE store = %s FOR UPDATE").format(s)
        self._advance = sql.SQL("UPDATE {}.positions SET position = %s WHERE store = %s").format(s)
        self._load = sql.SQL("SELECT table_id, state FROM {}.tables WHERE store = %s AND table_id = ANY(%s)").format(s)
        self._save = sql.SQL("INSERT INTO {}.tables (store, table_id, state) VALUES (%s, %s, %s) "
                             "ON CONFLICT (store, table_id) DO UPDATE SET state = EXCLUDED.state").format(s)
        self._copy = sql.SQL("COPY {}.hands ({}) FROM STDIN (FORMAT BINARY)").format(
            s, sql.SQL(", ").join(sql.Identifier(name) for name, _ in schema.HAND_COLUMNS))

    def stores(self) -> list[str]:
        if self._fixed is not None:
            return self._fixed
        if time.monotonic() - self._found_at >= DISCOVER_EVERY_S:
            found = stores_found(self.database_url, self.store_prefix)
            self._found = [store_schema(i, self.store_prefix) for i in found]
            self._found_at = time.monotonic()
        return self._found

    def step(self) -> int:
        """Project one batch of every store: the number of events projected."""
        return sum(self.project_batch(store) for store in self.stores())

    def catch_up(self) -> int:
        """Project until every store is projected to its end: the number of events."""
        total = 0
        while projected := self.step():
            total += projected
        return total

    def project_batch(self, store_name: str) -> int:
        """Project the next batch of one store in one transaction: the number of events."""
        store = self._store(store_name)
        conn = self._connection()
        try:
            with conn.transaction():
                conn.execute(self._claim, (store_name,))
                (position,) = conn.execute(self._lock, (store_name,)).fetchone()  # type: ignore[misc]
                notes = store.read_notifications(position + 1, self.batch_size)
                if not notes:
                    return 0
                states, carried = self._states(conn, store_name, position, notes)
                rows = _rows(store, states, carried, notes)
                with conn.cursor().copy(self._copy) as copy:
                    copy.set_types([kind for _, kind in schema.HAND_COLUMNS])
                    for row in rows:
                        copy.write_row(_columns(store_name, row))
                touched = sorted({n.stream_id for n in notes})
                conn.cursor().executemany(self._save, [(store_name, t, msgspec.json.encode(states[t])) for t in touched])
                conn.execute(self._advance, (notes[-1].id, store_name))
                if self.before_commit is not None:
                    self.before_commit(store_name, len(rows))
        except BaseException:
            self._cache.pop(store_name, None)
            if self._conn is not None and self._conn.broken:
                self.close()
            raise
        self._cache[store_name] = (notes[-1].id, states, carried)
        self.projected += len(notes)
        return len(notes)

    def _states(self, conn: psycopg.Connection[Any], store_name: str, position: int,
                notes: list[Notification]) -> tuple[dict[str, TableState], Carried]:
        """Each table's state before the batch, and the events of the hands running then:
        cached if the cache is as of ``position``, else the states as the database holds
        them (a new table starts empty) and no events (read back from the store)."""
        cached_at, states, carried = self._cache.get(store_name, (-1, {}, {}))
        if cached_at != position:
            states, carried = {}, {}
        missing = sorted({n.stream_id for n in notes} - states.keys())
        if missing:
            for table_id, state in conn.execute(self._load, (store_name, missing)).fetchall():
                states[table_id] = msgspec.json.decode(state, type=TableState)
            for table_id in missing:
                states.setdefault(table_id, TableState())
        return states, carried

    def _store(self, store_name: str) -> Any:
        store = self._stores.get(store_name)
        if store is None:
            (store,) = open_stores(self.database_url, [store_name], create=False)
            self._stores[store_name] = store
        return store

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.database_url, autocommit=True)
            schema.create(self._conn, self.history_schema)
        return self._conn

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        self._cache.clear()


Carried = dict[str, dict[int, Event]]
"""Per table, the events (by version) of its hand running at the end of a batch."""


def _rows(store: Any, states: dict[str, TableState], carried: Carried, notes: list[Notification]) -> list[HandRow]:
    """The rows of the hands that end in a batch (updating the tables' states and the
    events of the hands still running)."""
    rows: list[HandRow] = []
    for n in notes:
        events = carried.setdefault(n.stream_id, {})
        events[n.version] = n.event
        state = states[n.stream_id]
        start = follow(state, n.version, n.event)
        if start is not None:
            rows += hand_rows(state, _hand(store, n.stream_id, start, n.version, events), n.version)
        if state.hand_start is None:
            del carried[n.stream_id]
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
