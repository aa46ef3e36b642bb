"""The tracking projector: event stores' notification logs into a read model, exactly once.

One batch of one store is one transaction on the read model's database: claim and lock
the store's position row (``SELECT ... FOR UPDATE``), read the notifications after it
with the store's own reader, fold them into rows (the read model's :meth:`~TrackingProjector.rows`),
copy the rows, write the touched streams' states and the new position, commit.  A
projector killed mid-batch leaves nothing of the batch; the next one (or another
instance) starts again from the committed position.  Several instances are safe: the
row lock lets one fold a store's batch at a time, and each re-reads the position it
locked (the states cached in memory are used only while the position they were cached
at is still the committed one).

The ledger and the history are each a subclass: which stores, a stream's state, and
the fold of a batch into rows.  Sync code (psycopg) but :meth:`~TrackingProjector.run`,
which runs the batches in a thread.  docs/design/projections.md says why this is ours
and not eventsourcing's ``ProjectionRunner``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import psycopg
from psycopg import sql
from studroom.services.runtime.retry import RECONNECT
from studroom.services.store.inspect import (
    last_notification_ids,
    open_reader,
    store_exists,
    store_url,
)
from studroom.services.store.port import EventStore, Notification

from .tracking_schema import Rendered, Statements, TrackedSchema
from .tracking_wake import Waker

log = logging.getLogger(__name__)

BeforeCommit = Callable[[str, int], None]
"""A fault hook (tests): called with the store's name and the number of rows written,
just before the batch commits."""

Progress = Callable[[int, int | None], None]
"""Told how many more events are folded, and (first, with none folded) about how many
there are to fold (a progress bar's total)."""

DISCOVER_EVERY_S: Final = 5.0    # how often the stores are looked for again (a new one is found while running)
PACE_S: Final = 1.0              # the services' pace: a batch of the stores at most this often, unless one was full
                                 # (a batch's fixed cost, ~10 round trips, is paid per batch: projections.md, "Cost")
LOOK_S: Final = 5.0              # the services' look at every store when none notified an append


@dataclass
class Batch:
    """What a read model folds: one store's notifications after its position."""

    store: str                      # the store's name (its schema)
    reader: EventStore              # the store (a fold may read back what came before the batch)
    notes: list[Notification]
    states: dict[str, Any]          # each stream's state before the batch; the fold updates it
    memory: dict[str, Any]          # what the fold keeps between batches, valid while the states are


class TrackingProjector(ABC):
    """Folds stores into the read model in ``schema`` (tables: ``tables``)."""

    name: str = "projection"        # in the log

    def __init__(self, database_url: str, tables: TrackedSchema, schema: str, *, batch_size: int = 2000,
                 before_commit: BeforeCommit | None = None) -> None:
        self.database_url = database_url
        self.tables = tables
        self.schema = schema
        self.batch_size = batch_size
        self.before_commit = before_commit
        self.folded = 0                                  # events folded by this projector
        self._sql = Statements(tables, schema)
        self._rendered: Rendered | None = None            # the statements as sent on the connection
        self._types = [kind for _, kind in tables.columns]
        self._conn: psycopg.Connection[Any] | None = None
        self._readers: dict[str, Any] = {}
        self._channels: dict[str, tuple[str, str]] = {}   # store -> (its server's URL, its NOTIFY channel)
        self._full = False                                 # the last step read a full batch of some store
        self._cache: dict[str, tuple[int, dict[str, Any], dict[str, Any]]] = {}
        self._stores: list[str] = []
        self._looked_at = float("-inf")

    # --- what a read model says -----------------------------------------------------

    @abstractmethod
    def find_stores(self) -> list[str]:
        """The stores to fold (their schemas), in order; asked every few seconds."""

    @abstractmethod
    def state_type(self, store: str) -> type:
        """The state kept per stream of ``store`` (a msgspec Struct; ``state_type()`` is a new stream's)."""

    @abstractmethod
    def rows(self, batch: Batch) -> list[tuple[Any, ...]]:
        """The rows of a batch, in the columns of ``tables.columns`` (updating its states)."""

    # --- folding --------------------------------------------------------------------

    def stores(self) -> list[str]:
        if time.monotonic() - self._looked_at >= DISCOVER_EVERY_S:
            self._stores = self.find_stores()
            self._looked_at = time.monotonic()
        return self._stores

    def step(self) -> int:
        """Fold one batch of every store: the number of events folded."""
        stores = self.stores()
        if not stores:
            return 0
        positions = self._positions()
        folded = [self.fold_batch(store, positions.get(store, 0)) for store in stores]
        self._full = self.batch_size in folded
        return sum(folded)

    def catch_up(self, on_progress: Progress | None = None) -> int:
        """Fold until every store is folded to its end: the number of events folded."""
        if on_progress is not None:
            on_progress(0, self.behind())
        total = 0
        while folded := self.step():
            total += folded
            if on_progress is not None:
                on_progress(folded, None)
        return total

    def behind(self) -> int:
        """About how many events :meth:`catch_up` has to fold: each store's last
        notification id past the read model's position (ids may have gaps: at most)."""
        conn = self._connection()
        stores = [store for store in self.stores() if store_exists(conn, store)]
        positions = sql.SQL("SELECT store, position FROM {}.positions").format(sql.Identifier(self.schema))
        done = dict(conn.execute(positions).fetchall())
        return sum(max(0, last - done.get(store, 0)) for store, last in last_notification_ids(conn, stores).items())

    def fold_batch(self, store: str, position: int | None = None) -> int:
        """Fold the next batch of one store in one transaction: the number of events
        (0 too while the store does not exist yet).  ``position``: the store's
        position as read a moment ago (:meth:`step` reads them all at once).

        The notifications after it are read first, with no transaction: nothing to
        fold is one statement.  Then the position's row is locked (this instance
        alone folds the store now) and read again: another instance may have moved it
        meanwhile, and the notifications after the locked one are read anew (those
        read before stay valid as long as it did not: a store commits its ids in
        order).  Then the COPY of the rows, and the states and the position in one
        statement.  (psycopg's pipeline mode costs more CPU than the round trips it
        saves at this size: measured, docs/design/projections.md.)"""
        reader = self._reader(store)
        if reader is None:
            return 0
        conn = self._connection()
        sql_ = self._statements(conn)
        if position is None:
            position = self._positions().get(store, 0)
        notes = reader.read_notifications(position + 1, self.batch_size)
        if not notes:
            return 0
        try:
            with conn.transaction():
                (now_at,) = conn.execute(sql_.claim, (store,), prepare=True).fetchone()  # type: ignore[misc]
                if now_at != position:              # another instance folded meanwhile
                    position, notes = now_at, reader.read_notifications(now_at + 1, self.batch_size)
                    if not notes:
                        return 0
                batch = self._batch(conn, store, reader, position, notes)
                rows = self.rows(batch)
                with conn.cursor().copy(sql_.copy) as copy:
                    copy.set_types(self._types)
                    for row in rows:
                        copy.write_row(row)
                touched = sorted({n.stream_id for n in notes})
                encode = msgspec.json.encode
                conn.execute(sql_.save_and_advance, {"store": store, "streams": touched, "position": notes[-1].id,
                                                     "states": [encode(batch.states[t]) for t in touched]},
                             prepare=True)
                if self.before_commit is not None:
                    self.before_commit(store, len(rows))
        except BaseException:
            self._cache.pop(store, None)
            if self._conn is not None and self._conn.broken:
                self.close()
            raise
        self._cache[store] = (notes[-1].id, batch.states, batch.memory)
        self.folded += len(notes)
        return len(notes)

    def _positions(self) -> dict[str, int]:
        """Every store's position in the read model (one statement)."""
        conn = self._connection()
        return dict(conn.execute(self._statements(conn).positions, prepare=True).fetchall())

    def _batch(self, conn: psycopg.Connection[Any], store: str, reader: Any, position: int,
               notes: list[Notification]) -> Batch:
        """The batch with each stream's state before it: cached (and the fold's memory)
        if the cache is as of ``position``, else as the read model holds them (a new
        stream starts empty) and an empty memory."""
        cached_at, states, memory = self._cache.get(store, (-1, {}, {}))
        if cached_at != position:
            states, memory = {}, {}
        missing = sorted({n.stream_id for n in notes} - states.keys())
        if missing:
            state_type = self.state_type(store)
            for stream, state in conn.execute(self._statements(conn).load, (store, missing)).fetchall():
                states[stream] = msgspec.json.decode(state, type=state_type)
            for stream in missing:
                states.setdefault(stream, state_type())
        return Batch(store, reader, notes, states, memory)

    def _reader(self, store: str) -> Any:
        """The store's reader, once the store exists."""
        reader = self._readers.get(store)
        if reader is None and store_exists(self._connection(), store):
            reader = self._readers[store] = open_reader(self.database_url, store)
            self._channels[store] = (store_url(self.database_url, store), reader.channel)
        return reader

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.database_url, autocommit=True)
            self.tables.create(self._conn, self.schema)
        return self._conn

    def _statements(self, conn: psycopg.Connection[Any]) -> Rendered:
        """The batch's statements rendered once (prepared by the server on use)."""
        if self._rendered is None:
            self._rendered = self._sql.render(conn)
        return self._rendered

    def close(self) -> None:
        """Let go of the connection, the readers and the cache (the stores are looked for anew)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()
        self._channels.clear()
        self._cache.clear()
        self._looked_at = float("-inf")

    # --- running --------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, *, idle_s: float, pace_s: float = 0.0, listen: bool = False) -> None:
        """Fold until ``stop``: a batch of every store, again at once while some batch
        was full, else ``pace_s`` seconds after the last began while there is work
        (bigger batches for less work: the services' :data:`PACE_S`), else after
        ``idle_s`` (a look) or, with ``listen``, as soon as a store notifies an append
        (tracking_wake.py; the services' look is then :data:`LOOK_S`).  After a failure
        (PostgreSQL away, the read model dropped for a rebuild, an event that cannot be
        folded) it starts again on new connections, after a pause of the RECONNECT
        policy."""
        waker = Waker() if listen else None
        pauses = RECONNECT.pauses()
        try:
            while not stop.is_set():
                started = time.monotonic()
                if waker is not None:
                    waker.woken.clear()                 # what is appended from now on wakes the next step
                try:
                    folded = await asyncio.to_thread(self.step)
                    if waker is not None:
                        if folded:
                            await waker.unlisten()      # busy: folds at its pace, no wake-up per append
                        elif await waker.listen(set(self._channels.values())):
                            continue                    # listening now: fold once more, then sleep
                    pauses = RECONNECT.pauses()
                except Exception as error:  # noqa: BLE001 (any failure: log it, start again)
                    pause = next(pauses)
                    log.error("%s: %s: %s; trying again in %.1f s", self.name, type(error).__name__, error, pause)
                    await asyncio.to_thread(self.close)
                    if waker is not None:
                        await waker.close()
                    await _wait(stop, pause)
                    continue
                if self._full:
                    continue
                if folded:
                    await _wait(stop, started + pace_s - time.monotonic())
                elif waker is not None:
                    await waker.sleep(stop, idle_s)
                else:
                    await _wait(stop, idle_s)
        finally:
            if waker is not None:
                await waker.close()


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    """Until ``stop`` is set or ``seconds`` have passed."""
    if seconds > 0 and not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)
