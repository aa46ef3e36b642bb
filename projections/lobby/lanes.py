"""One lane per table: its public events applied in order, exactly once, and written to
the bucket with compare-and-set.

Messages of a table wait in its lane while the previous batch is written; the next
batch takes all of them (under load a write carries many events).  A batch starts from
the entry as last written (or read from the bucket), applies what :func:`.ordering.place`
says is next, and writes once, naming the revision it started from: if another
instance wrote meanwhile, the write is refused, and the batch starts again from the
bucket's value.  Only then are its messages acknowledged; those that must wait for a
predecessor are asked for again later.  When the stream shows that the versions
missing before an event are lost (a dead letter, a retention limit), or an event
cannot be applied, the entry is rebuilt from the table's own view (``ViewTable``).
Why: docs/design/lobby.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import nats.js.errors
from studroom.domain.events import TableEvent
from studroom.domain.views import TableView
from studroom.services.wire import subjects
from studroom.services.wire.pull import retry_later

from .entry import LobbyEntry, decode, encode
from .mirror import Mirror
from .ordering import Place, place
from .projection import NotOpened, apply, from_view

log = logging.getLogger("studroom.lobby")

VERSION_HEADER: Final = "Studroom-Version"      # the relay's header: the event's version
ATTEMPTS: Final = 10                            # compare-and-set rounds lost before a redelivery

_event_decoder = msgspec.json.Decoder(TableEvent)

ViewOf = Callable[[str], Awaitable[TableView]]


@dataclass(slots=True)
class Item:
    """One public message of a table, waiting in its lane."""

    version: int
    seq: int                       # its sequence in the public stream
    at_ms: int                     # when JetStream stored it
    data: bytes
    msg: Any
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@dataclass
class LaneStats:
    applied: int = 0           # events applied to an entry
    seen: int = 0              # redelivered or published twice: changed nothing
    waited: int = 0            # asked for again: a predecessor was still on its way
    writes: int = 0            # values written to the bucket
    conflicts: int = 0         # writes refused: another instance wrote first
    resyncs: int = 0           # entries rebuilt from the table's own view
    failed: int = 0            # batches given back for redelivery (NATS errors)


@dataclass
class Folded:
    """What a batch did to an entry."""

    entry: LobbyEntry | None
    done: list[Item] = field(default_factory=list)       # to acknowledge
    waiting: list[Item] = field(default_factory=list)    # to ask for again
    changed: bool = False


class Lanes:
    def __init__(self, js: Any, kv: Any, view_of: ViewOf, mirror: Mirror, stats: LaneStats | None = None) -> None:
        self.js = js
        self.kv = kv
        self.view_of = view_of
        self.mirror = mirror
        self.stats = stats if stats is not None else LaneStats()
        self._queues: dict[str, list[Item]] = {}              # a table's lane is busy while here
        self._written: dict[str, tuple[LobbyEntry, int]] = {}  # per table: the entry as written, its revision
        self._tasks: set[asyncio.Task[None]] = set()

    async def take(self, table_id: str, item: Item) -> None:
        """Put ``item`` in its table's lane; return when it is acknowledged or given back."""
        queue = self._queues.get(table_id)
        if queue is not None:
            queue.append(item)
        else:
            self._queues[table_id] = [item]
            task = asyncio.create_task(self._drain(table_id))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        await item.done

    async def _drain(self, table_id: str) -> None:
        try:
            while batch := self._queues[table_id]:
                self._queues[table_id] = []
                try:
                    await self._settle(table_id, batch)
                finally:
                    _release(batch)
        finally:
            _release(self._queues.pop(table_id))

    async def _settle(self, table_id: str, batch: list[Item]) -> None:
        """Apply, write and acknowledge ``batch``, or give it back for redelivery."""
        batch.sort(key=lambda item: item.seq)
        try:
            for _ in range(ATTEMPTS):
                entry, revision = await self._current(table_id)
                folded = await self._fold(table_id, entry, batch)
                if not folded.changed:
                    self._keep(table_id, entry, revision)
                elif not await self._write(table_id, folded.entry, revision):
                    continue
                await self._answer(folded)
                return
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 (NATS away, no view of the table: all comes again)
            log.info("lobby: %s not written (%r): redelivery", table_id, e)
        self.stats.failed += 1
        for item in batch:
            await retry_later(item.msg)

    def _keep(self, table_id: str, entry: LobbyEntry | None, revision: int | None) -> None:
        """The entry as it is in the bucket, for the table's next batch."""
        if entry is not None and revision is not None:
            self._written[table_id] = (entry, revision)

    async def _current(self, table_id: str) -> tuple[LobbyEntry | None, int | None]:
        """The entry as this instance last wrote it, else as the bucket has it (and its
        revision: None when there is none)."""
        written = self._written.pop(table_id, None)
        if written is not None:
            return written
        try:
            value = await self.kv.get(table_id)
        except nats.js.errors.KeyNotFoundError:
            return None, None
        try:
            return decode(value.value or b""), value.revision
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.warning("lobby value of %s is no entry: replaced", table_id)
            return None, value.revision

    async def _write(self, table_id: str, entry: LobbyEntry | None, revision: int | None) -> bool:
        """Compare-and-set; False when another instance wrote since ``revision``."""
        assert entry is not None
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
        self.mirror.put(table_id, written, data)
        return True

    async def _answer(self, folded: Folded) -> None:
        for item in folded.done:
            await item.msg.ack()
        for item in folded.waiting:
            await retry_later(item.msg)
        self.stats.waited += len(folded.waiting)

    async def _fold(self, table_id: str, entry: LobbyEntry | None, batch: list[Item]) -> Folded:
        """Apply what comes next of ``batch`` to ``entry`` (changed in place)."""
        folded = Folded(entry)
        for item in batch:
            if folded.waiting:                        # behind a gap: everything waits
                folded.waiting.append(item)
                continue
            where = place(folded.entry.version if folded.entry is not None else 0, item.version)
            if where is Place.SEEN:
                self.stats.seen += 1
                folded.done.append(item)
            elif where is Place.NEXT or await self._lost_before(table_id, folded.entry, item):
                await self._apply(table_id, folded, item, resync=where is Place.GAP)
            else:
                folded.waiting.append(item)
        return folded

    async def _apply(self, table_id: str, folded: Folded, item: Item, *, resync: bool) -> None:
        if not resync:
            try:
                folded.entry = apply(folded.entry, _event_decoder.decode(item.data), item.version, item.seq,
                                     item.at_ms)
            except (msgspec.DecodeError, msgspec.ValidationError, NotOpened) as e:
                log.warning("lobby: %s version %d cannot be applied (%s): the table's view instead",
                            table_id, item.version, e)
                resync = True
        if resync:
            view = await self.view_of(table_id)
            if view.version < item.version:           # the table cannot be behind its stream
                folded.waiting.append(item)
                return
            folded.entry = from_view(view, folded.entry, item.seq, item.at_ms)
            self.stats.resyncs += 1
            log.warning("lobby: %s rebuilt from its view at version %d", table_id, view.version)
        self.stats.applied += 1
        folded.done.append(item)
        folded.changed = True

    async def _lost_before(self, table_id: str, entry: LobbyEntry | None, item: Item) -> bool:
        """Are the versions missing before ``item`` lost for good?  Yes if no message of
        the table between the entry's last one and ``item`` carries one of them."""
        applied = entry.version if entry is not None else 0
        seq = entry.seq + 1 if entry is not None else 1
        subject = subjects.public_events(table_id)
        while seq < item.seq:
            try:
                msg = await self.js.get_msg(subjects.PUBLIC_STREAM, seq=seq, subject=subject, next=True,
                                            direct=True)
            except nats.js.errors.NotFoundError:
                return True
            if msg.seq is None or msg.seq >= item.seq:
                return True
            version = _version(msg.headers)
            if version is not None and applied < version < item.version:
                return False
            seq = msg.seq + 1
        return True

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait for the lanes at work (what is not acknowledged comes again)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)


def _release(items: list[Item]) -> None:
    for item in items:
        if not item.done.done():
            item.done.set_result(None)


def _version(headers: dict[str, str] | None) -> int | None:
    text = (headers or {}).get(VERSION_HEADER, "")
    return int(text) if text.isdigit() else None


def item_of(msg: Any, at_ms: int) -> tuple[str, Item] | None:
    """The table and lane item of a public message; None when it says no version."""
    version = _version(msg.headers)
    if version is None:
        return None
    table_id = msg.subject.rsplit(".", 1)[-1]
    return table_id, Item(version, msg.metadata.sequence.stream, at_ms, msg.data, msg)
