"""One lane per table: its public messages (each a run of its events) applied in order,
exactly once, and written to the bucket with compare-and-set.

Messages of a table wait in its lane while the previous batch is written, and until
``every`` seconds (``EVERY``, 250 ms) have passed since that batch began; the next batch
takes all of them, so a table is written at most four times a second whatever the pace
of play (issue 20).  A batch starts from
the entry as last written (or read from the bucket, if it is the lobby's own:
:mod:`.ownership`), applies what :func:`.ordering.place` says is next, and writes once,
naming the revision it started from: if another instance wrote meanwhile, the write is
refused, and the batch starts again from the bucket's value.  Only then are its
messages acknowledged.  The versions missing before a message (a gap) are read back
from the public stream (:mod:`.stream`); from no entry, that rebuilds the whole entry
(the bucket's value was missing, or not the lobby's own).  When the stream lacks them
too (a dead letter, a retention limit), or a message cannot be applied, the entry is
rebuilt from the table's own view (``ViewTable``).  A message waits in its lane as it
came, its body decoded only when applied (:mod:`.messages`).  Why: docs/design/lobby.md.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import nats.js.errors
from studroom.domain.names import is_name
from studroom.domain.views import TableView
from studroom.services.wire import raw
from studroom.services.wire.pull import retry_later

from .entry import LobbyEntry, decode, encode
from .messages import UNREADABLE, Item, applied, entry_version, events_in
from .mirror import Mirror
from .ordering import EVERY, Place, place, seen
from .ownership import own_entry
from .projection import NotOpened, from_view, refigure
from .stream import PublicStream

__all__ = ["EVERY", "LaneStats", "Lanes"]

log = logging.getLogger("studroom.lobby")

ATTEMPTS: Final = 10                            # compare-and-set rounds lost before a redelivery
HEAL_AGAIN: Final = 2.0                         # seconds before a heal that failed is tried again

ViewOf = Callable[[str], Awaitable[TableView]]


@dataclass
class LaneStats:
    applied: int = 0           # events applied to an entry (a message's after the entry's version)
    seen: int = 0              # messages redelivered or published twice: changed nothing
    waited: int = 0            # messages asked for again: the table's view was behind its stream
    writes: int = 0            # values written to the bucket
    conflicts: int = 0         # writes refused: another instance wrote first
    resyncs: int = 0           # entries rebuilt from the table's own view
    failed: int = 0            # batches given back for redelivery (NATS errors)
    read_back: int = 0         # events read back from the public stream (after a gap)
    rebuilt: int = 0           # entries rebuilt from the public stream (missing, or not the lobby's own)
    foreign: int = 0           # values found in the bucket that were not the lobby's own
    removed: int = 0           # of them, deleted: the stream has nothing of the table to rebuild from


@dataclass
class Found:
    """A table's entry as a batch starts from it."""

    entry: LobbyEntry | None
    revision: int | None           # to write over (None: no value, or a delete or purge marker)
    foreign: bool = False          # the bucket's value was not the lobby's own
    restored: bool = False         # ``entry`` is this instance's last write, standing in for a value
                                   # missing or not the lobby's own


@dataclass
class Folded:
    """What a batch did to an entry."""

    entry: LobbyEntry | None
    done: list[Item] = field(default_factory=list)       # to acknowledge
    waiting: list[Item] = field(default_factory=list)    # to ask for again (the view was behind)
    changed: bool = False
    read_back: int = 0             # events read back from the stream
    read_s: float = 0.0            # seconds spent reading them back
    from_zero: bool = False        # the whole table read back (no entry to start from)


class Lanes:
    def __init__(self, js: Any, kv: Any, view_of: ViewOf, mirror: Mirror, stats: LaneStats | None = None,
                 every: float = EVERY, nc: Any = None) -> None:
        self.stream = PublicStream(js)
        self.nc = nc                                          # the acks' connection (None: each msg.ack())
        self.every = every                                    # seconds between two batches of a table
        self.kv = kv
        self.view_of = view_of
        self.mirror = mirror
        self.stats = stats if stats is not None else LaneStats()
        self._queues: dict[str, list[Item]] = {}              # a table's lane is busy while here
        self._written: dict[str, tuple[LobbyEntry, int]] = {}  # per table: the entry as written, its revision
        self._own: dict[str, bytes] = {}                      # per table: the last value this instance wrote
        self._recheck: set[str] = set()                       # tables whose value the mirror found damaged
        self._began: dict[str, float] = {}                    # per table: when its last batch began (monotonic)
        self._tasks: set[asyncio.Task[None]] = set()
        mirror.damaged = self.heal

    def take(self, table_id: str, item: Item) -> asyncio.Future[None]:
        """Put ``item`` in its table's lane; its future is done when it is acknowledged or
        given back."""
        queue = self._queues.get(table_id)
        if queue is not None:
            queue.append(item)
        else:
            self._queues[table_id] = [item]
            self._open(table_id)
        return item.done

    def heal(self, table_id: str) -> None:
        """Look at the table's value again with nothing new to apply (the mirror found it
        deleted, purged or unreadable): rebuilt from the stream unless it is the lobby's
        own, so that a table where nothing happens comes back too."""
        if not is_name(table_id):
            return                                    # no table's key: nothing to rebuild it from
        self._recheck.add(table_id)
        if table_id not in self._queues:
            self._queues[table_id] = []
            self._open(table_id)

    def _open(self, table_id: str) -> None:
        task = asyncio.create_task(self._drain(table_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drain(self, table_id: str) -> None:
        try:
            while self._queues[table_id] or table_id in self._recheck:
                await self._pace(table_id)            # what arrives meanwhile joins this batch
                batch = self._queues[table_id]
                if table_id in self._recheck:         # the bucket's value, not what this instance wrote
                    self._recheck.discard(table_id)
                    self._written.pop(table_id, None)
                self._queues[table_id] = []
                try:
                    await self._settle(table_id, batch)
                finally:
                    _release(batch)
        finally:
            _release(self._queues.pop(table_id))

    async def _pace(self, table_id: str) -> None:
        """Wait until ``every`` seconds have passed since the table's last batch began: the
        first event after a quiet spell is written at once, the others at most once an
        interval, all that came meanwhile in one write (docs/design/lobby.md, "Cost")."""
        now = time.monotonic()
        wait = self._began.get(table_id, now - self.every) + self.every - now
        if wait > 0:
            await asyncio.sleep(wait)
        self._began[table_id] = time.monotonic()

    async def _settle(self, table_id: str, batch: list[Item]) -> None:
        """Apply, write and acknowledge ``batch``, or give it back for redelivery."""
        batch.sort(key=lambda item: item.seq)
        try:
            for _ in range(ATTEMPTS):
                found = await self._current(table_id)
                folded = await self._fold(table_id, found, batch)
                if folded.changed:
                    if not await self._write(table_id, folded.entry, found.revision):
                        continue
                    if found.restored or folded.from_zero:
                        self._rebuilt(table_id, found, folded)
                elif found.foreign:
                    if not await self._remove(table_id, found.revision):
                        continue
                else:
                    self._keep(table_id, found.entry, found.revision)
                await self._answer(folded)
                return
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 (NATS away, no view of the table: all comes again)
            log.info("lobby: %s not written (%r): redelivery", table_id, e)
        self.stats.failed += 1
        for item in batch:
            await retry_later(item.msg)
        if not batch:                                 # a heal: nothing comes again by itself
            asyncio.get_running_loop().call_later(HEAL_AGAIN, self.heal, table_id)

    def _keep(self, table_id: str, entry: LobbyEntry | None, revision: int | None) -> None:
        """The entry as it is in the bucket, for the table's next batch."""
        if entry is not None and revision is not None:
            self._written[table_id] = (entry, revision)

    async def _current(self, table_id: str) -> Found:
        """The entry as this instance last wrote it, else as the bucket has it if it is
        the lobby's own; for a value missing or not the lobby's own, the last value this
        instance wrote (the events since are read back from the stream), else nothing
        (the whole table is)."""
        written = self._written.pop(table_id, None)
        if written is not None:
            return Found(*written)
        try:
            value = await self.kv.get(table_id)
        except nats.js.errors.KeyNotFoundError:              # never written, deleted or purged
            return self._restored(table_id, None, foreign=False)
        entry, why = await own_entry(self.stream, table_id, value.value or b"")
        if entry is not None:
            return Found(entry, value.revision)
        self.stats.foreign += 1
        log.warning("lobby: the value of %s (revision %d) is not the lobby's own (%s): rebuilt from the "
                    "public stream", table_id, value.revision, why)
        return self._restored(table_id, value.revision, foreign=True)

    def _restored(self, table_id: str, revision: int | None, *, foreign: bool) -> Found:
        own = self._own.get(table_id)
        return Found(decode(own) if own is not None else None, revision, foreign, restored=own is not None)

    def _rebuilt(self, table_id: str, found: Found, folded: Folded) -> None:
        assert folded.entry is not None
        self.stats.rebuilt += 1
        log.warning("lobby: %s rebuilt from the public stream (%d events read back %s in %.0f ms), version %d",
                    table_id, folded.read_back,
                    "after this instance's last write" if found.restored else "from the table's first",
                    1000 * folded.read_s, folded.entry.version)

    async def _write(self, table_id: str, entry: LobbyEntry | None, revision: int | None) -> bool:
        """Compare-and-set; False when another instance wrote since ``revision``."""
        assert entry is not None
        refigure(entry)                               # once a write, not once an event
        data = encode(entry)
        try:
            if revision is None:
                written = await self.kv.create(table_id, data)
            else:
                written = await self.kv.update(table_id, data, last=revision)
        except (nats.js.errors.KeyWrongLastSequenceError, nats.js.errors.BadRequestError):
            self.stats.conflicts += 1
            return False
        self.stats.writes += 1
        self._keep(table_id, entry, written)
        self._own[table_id] = data
        self.mirror.put(table_id, written, data)
        return True

    async def _remove(self, table_id: str, revision: int | None) -> bool:
        """Delete a value that is not the lobby's own when the stream has nothing of the
        table to rebuild it from (a key of no table, or a table past the stream's
        retention, whose next event takes the table's view); False as :meth:`_write`."""
        try:
            await self.kv.delete(table_id, last=revision)
        except (nats.js.errors.KeyWrongLastSequenceError, nats.js.errors.BadRequestError):
            self.stats.conflicts += 1
            return False
        self.stats.removed += 1
        log.warning("lobby: the value of %s removed (no public message of it to rebuild it from)", table_id)
        return True

    async def _answer(self, folded: Folded) -> None:
        await raw.ack(self.nc, [item.msg for item in folded.done])
        for item in folded.waiting:
            await retry_later(item.msg)
        self.stats.waited += len(folded.waiting)

    async def _fold(self, table_id: str, found: Found, batch: list[Item]) -> Folded:
        """Apply what comes next of ``batch`` to the entry found (changed in place); with
        no batch (a heal), whatever the stream holds after the entry.  A restored entry
        is written even if nothing came after it."""
        folded = Folded(found.entry, changed=found.restored)
        if not batch:
            await self._read_back(table_id, folded, None)
        for item in batch:
            if folded.waiting:                        # behind a gap: everything waits
                folded.waiting.append(item)
            elif seen(entry_version(folded.entry), item.version):
                self.stats.seen += 1
                folded.done.append(item)
            else:
                await self._take(table_id, folded, item)
        return folded

    async def _take(self, table_id: str, folded: Folded, item: Item) -> None:
        """Apply the events of ``item`` after the entry's version, its missing
        predecessors read back from the stream first; the table's view instead when the
        stream lacks them or the message cannot be applied."""
        before = entry_version(folded.entry)
        try:
            events = events_in(item)
        except UNREADABLE as e:
            await self._unreadable(table_id, folded, item, before, e)
            return
        if place(before, events[0][0], item.version) is Place.GAP:
            await self._read_back(table_id, folded, item.seq)
            before = entry_version(folded.entry)
        where = place(before, events[0][0], item.version)
        if where is Place.SEEN:
            self.stats.seen += 1
            folded.done.append(item)
        elif where is Place.GAP:
            await self._resync(table_id, folded, item, before)
        else:
            try:
                folded.entry = applied(folded.entry, events, item.seq, item.at_ms)
            except NotOpened as e:
                await self._unreadable(table_id, folded, item, before, e)
                return
            self._done(folded, item, before)

    async def _unreadable(self, table_id: str, folded: Folded, item: Item, before: int, why: Exception) -> None:
        log.warning("lobby: %s message %d (version %d) cannot be applied (%s): the table's view instead",
                    table_id, item.seq, item.version, why)
        await self._resync(table_id, folded, item, before)

    async def _resync(self, table_id: str, folded: Folded, item: Item, before: int) -> None:
        """The entry from the table's view, at ``item``'s version or later; ``item``
        waits when the view is behind it."""
        view = await self.view_of(table_id)
        if view.version < item.version:               # the table cannot be behind its stream
            folded.waiting.append(item)
            return
        folded.entry = from_view(view, folded.entry, item.seq, item.at_ms)
        self.stats.resyncs += 1
        log.warning("lobby: %s rebuilt from its view at version %d", table_id, view.version)
        self._done(folded, item, before)

    def _done(self, folded: Folded, item: Item, before: int) -> None:
        """``item`` applied to an entry that was at version ``before``."""
        self.stats.applied += item.version - before
        folded.done.append(item)
        folded.changed = True

    async def _read_back(self, table_id: str, folded: Folded, before: int | None) -> None:
        """Apply the table's messages the stream holds after the entry's and before
        sequence ``before`` (None: to its end): a message's predecessors after a gap,
        or, from no entry, the whole table (a rebuild).  Stops where the stream lacks a
        version (lost) or a message cannot be applied: what comes after takes the
        table's own view."""
        start, began = folded.entry, time.monotonic()
        was = entry_version(start)
        async for stored in self.stream.after(table_id, start.seq if start is not None else 0, before):
            if seen(entry_version(folded.entry), stored.version):
                continue
            try:
                events = events_in(stored)
                if place(entry_version(folded.entry), events[0][0], stored.version) is Place.GAP:
                    break
                folded.entry = applied(folded.entry, events, stored.seq, stored.at_ms)
            except (*UNREADABLE, NotOpened):
                break
        folded.read_s += time.monotonic() - began
        count = entry_version(folded.entry) - was
        if count:
            folded.changed, folded.from_zero = True, folded.from_zero or start is None
            folded.read_back += count
            self.stats.read_back += count

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait for the lanes at work (what is not acknowledged comes again)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)


def _release(items: list[Item]) -> None:
    for item in items:
        if not item.done.done():
            item.done.set_result(None)
