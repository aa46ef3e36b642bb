"""One store's relay: read its notification log in batches, publish each batch, wait
for its acks, set aside the messages that could not be published (dead letters),
record the position; on every (re)start recover the batch that may have been in
flight. How that makes every message exactly once, and the latency and
position-record trade-offs: docs/design/relay.md."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import nats.js.errors
import psycopg
from eventsourcing.persistence import PersistenceError

from ..store.port import EventStore, Notification
from ..wire import subjects
from .bus import bus, pause, raise_if_cancelled
from ..store.commits import Commits
from .config import RelayConfig
from .dead_letters import DeadLetter
from .errors import BusError, Conflict, RelayError
from .outbox import Letters, Outbox, Prepared, dead_letter
from .position import PositionRecord
from .publisher import Acks, Publisher
from .recovery import already_stored

log = logging.getLogger(__name__)


@dataclass
class StoreStats:
    events: int = 0             # notifications relayed (their messages acked)
    messages: int = 0           # messages published (acked)
    duplicates: int = 0         # acks that said "duplicate" (the dedupe window at work)
    skipped: int = 0            # private copies and public views found already stored by a recovery scan
    dead_letters: int = 0       # messages set aside (docs/design/relay.md)
    recoveries: int = 0
    batches: int = 0
    records: int = 0            # position records written
    reads: int = 0              # reads of the notification log (an idle relay that hears nothing makes none)


class StoreRelay:
    """Relays one event store; ``commits``: the commits heard in its database (None:
    a store that does not notify, polled every ``poll_interval``)."""

    def __init__(self, store: EventStore, name: str, config: RelayConfig = RelayConfig(),
                 commits: Commits | None = None):
        self.store = store
        self.commits = commits
        self.name = subjects.check_name(name)
        self.config = config
        self.outbox = Outbox(name, store.load, config.max_tables)
        self.position = 0               # as recorded in the KV bucket
        self.acked = 0                  # every message up to here is acked (>= position)
        self.unrecorded = 0             # notifications in (position, acked]
        self.pub_seq = 0
        self.priv_seq = 0
        self.revision: int | None = None
        self.stats = StoreStats()
        self._recorded_at = 0.0
        self._end: int | None = None    # the store's last notification id when last read to its end
        self._found_at = 0.0            # when a read last found notifications (monotonic)
        self._prepare_lock = threading.Lock()
        self._wake: asyncio.Event | None = None
        reader = getattr(store, "notification_reader", None)
        self._reader = reader() if reader is not None else None

    # -- reading

    async def prepare(self, start: int, limit: int) -> Prepared:
        """The next batch: notifications from ``start`` and their messages."""
        return await self._build(start, await self._read(start, limit))

    async def _read(self, start: int, limit: int) -> Sequence[Notification]:
        """Read on the event loop (an asyncio connection: the relay makes hundreds of
        small reads a second under live load, a thread hop each cost a fifth of its CPU)."""
        self._end = None
        self.stats.reads += 1
        if self._reader is not None:
            notes = await self._reader.read(start, limit)
        else:
            notes = await asyncio.to_thread(self.store.read_notifications, start, limit)
        last = notes[-1].id if notes else start - 1
        self._end = last if len(notes) < limit else None
        self._pace(bool(notes))
        return notes

    def _pace(self, found: bool) -> None:
        """Listen for commits only while the store is quiet: a read that found some
        makes the listener stop (the nudges and the poll read on); none found for a
        ``poll_interval`` makes it listen again (relay.md, "Listening only while idle")."""
        if self.commits is None:
            return
        if found:
            self._found_at = time.monotonic()
            self.commits.busy()
        elif time.monotonic() - self._found_at >= self.config.poll_interval:
            self.commits.idle()

    async def _build(self, start: int, notes: Sequence[Notification],
                     published: dict[str, int] | None = None) -> Prepared:
        """The messages of ``notes``, built here unless a seat map must be loaded from
        the store first (a restart, a table met mid-stream): that goes to a thread."""
        if self.outbox.seats.follows(notes):
            letters = self._messages(notes, published)
        else:
            letters = await asyncio.to_thread(self._messages, notes, published)
        last = notes[-1].id if notes else start - 1
        return Prepared(start, last, len(notes), letters.publish, letters.set_aside)

    def _messages(self, notes: Sequence[Notification], published: dict[str, int] | None) -> Letters:
        with self._prepare_lock:    # a cancelled prefetch's thread may still be running
            return self.outbox.messages(notes, published)

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()

    # -- waking

    @property
    def wake(self) -> asyncio.Event:
        """Set by the table service's nudge after a commit to this store, and when the
        relay stops: read at once."""
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake

    async def on_nudge(self, _msg: Any) -> None:
        self.wake.set()

    def _heard(self) -> bool:
        """Whether a commit may have come since the last read: one was heard, or
        nobody listens."""
        return self.commits is None or not self.commits.listening or self.commits.wake.is_set()

    def _clear(self) -> None:
        """Before a read: what wakes from now on is after it."""
        self.wake.clear()
        if self.commits is not None:
            self.commits.take()

    def known_end(self) -> int | None:
        """The store's last notification id without asking it: known when no commit
        was heard since a read reached the end (None: ask)."""
        return None if self._heard() or self.wake.is_set() else self._end

    async def _idle(self) -> None:
        """Wait for a nudge; not longer than the position record may wait, nor than the
        poll once a commit was heard (another store's, or a nudge lost). While none is
        heard there is nothing to read: no poll (issue 20)."""
        if self.unrecorded:
            await pause(self.wake, self.config.position_interval)
            return
        if not self._heard():
            await self.commits.wait(self.wake)  # type: ignore[union-attr]  # (heard: it listens)
        await pause(self.wake, self.config.poll_interval)

    # -- the loop

    async def run(self, js: Any, kv: Any, dead: Any, stop: asyncio.Event, publisher: Publisher,
                  public_max: int = 0) -> None:
        """Relay until ``stop`` (``kv``: the positions, ``dead``: the dead letters;
        ``public_max``: the public stream's own message limit, 0 for none); raises
        BusError when NATS fails (the caller reconnects); store errors are retried
        here with backoff."""
        self.outbox.max_payload = publisher.max_payload
        self.outbox.max_public = public_max
        pauses = self.config.backoff.pauses()
        while not stop.is_set():
            try:
                await self._recover_and_follow(js, kv, dead, stop, publisher)
            except (BusError, asyncio.CancelledError):
                raise
            except Exception as error:
                level = logging.WARNING if isinstance(error, Conflict) else logging.ERROR
                expected = (Conflict, RelayError, OSError, PersistenceError, psycopg.Error)
                backoff = next(pauses)
                log.log(level, "relay %s: %r; retrying in %.1fs", self.name, error, backoff,
                        exc_info=not isinstance(error, expected))
                await pause(stop, backoff)

    async def _recover_and_follow(self, js: Any, kv: Any, dead: Any, stop: asyncio.Event,
                                  publisher: Publisher) -> None:
        batch, present = await self.recover(js, kv)
        prefetch: asyncio.Future[Prepared] | None = None
        try:
            while True:
                raise_if_cancelled()
                if batch.count:
                    acks = await self._send(publisher, batch, present)
                    present = set()
                    if not stop.is_set() and self._more_waiting(batch):
                        self._clear()          # read the next batch while the acks come in
                        prefetch = asyncio.ensure_future(
                            self.prepare(batch.last_id + 1, self.config.batch_size)
                        )
                    await self._acked(batch, publisher, acks, dead)
                    if self._record_due():
                        await self._record(kv)
                if stop.is_set():
                    await self._record(kv)
                    return
                if prefetch is not None:
                    batch, prefetch = await prefetch, None
                    if batch.count:
                        continue
                if self._record_due():
                    await self._record(kv)
                await self._idle()             # at once when nudged meanwhile
                self._clear()
                batch = await self.prepare(self.acked + 1, self.config.batch_size)
        finally:
            if prefetch is not None:
                prefetch.cancel()  # a thread building messages finishes on its own (locked)

    def _more_waiting(self, batch: Prepared) -> bool:
        """Whether the store is known to hold more: the batch was full, or a commit
        nudged since it was read.  Otherwise the next read waits for a nudge (or the
        poll): under live load a read straight after every batch found nothing half
        the time, a PostgreSQL round trip each (docs/design/relay.md)."""
        return batch.count >= self.config.batch_size or self.wake.is_set()

    # -- recovery

    async def recover(self, js: Any, kv: Any) -> tuple[Prepared, set[str]]:
        """Read the position record; return the batch that may have been in flight
        and the ids of its messages JetStream already holds."""
        self.stats.recoveries += 1
        began = time.perf_counter()
        record = PositionRecord()
        with bus(f"{self.name}: read position"):
            try:
                entry = await kv.get(self.name)
            except nats.js.errors.KeyNotFoundError:
                self.revision = None
            else:
                self.revision = entry.revision
                record = PositionRecord.decode(entry.value)
        self.position = self.acked = record.position
        self.unrecorded = 0
        self.pub_seq = record.pub_seq
        self.priv_seq = record.priv_seq
        window = max(record.window, self.config.batch_size)
        if self.position:
            top = await asyncio.to_thread(self.store.max_notification_id)
            if top < self.position:
                msg = (
                    f"store {self.name} ends at notification {top} but was relayed up to "
                    f"{self.position}: a different or reset store? (a new store needs new "
                    f"streams, or key {self.name!r} of bucket {subjects.RELAY_BUCKET} and its "
                    "messages deleted)"
                )
                raise RelayError(msg)
        start = self.position + 1
        notes = await self._read(start, window)
        with bus(f"{self.name}: recovery scan"):
            stored = await already_stored(js, self.name, {n.stream_id for n in notes}, self.pub_seq,
                                          self.priv_seq, self.config.request_timeout)
            # Write the record (a claim on the store, and a window at least this big).
            await self._save(kv, self.position, max(window, self._window()))
            self._recorded_at = time.monotonic()
        batch = await self._build(start, notes, stored.versions)
        present = stored.ids & {m.msg_id for m in batch.messages}
        skipped = sum(1 for n in notes if n.version <= stored.versions.get(n.stream_id, 0))
        self.stats.skipped += len(present) + skipped
        if present or skipped or batch.count:
            log.info(
                "relay %s: resuming after notification %d; %d private copies and the public views "
                "of %d events of the next %d already stored (recovery took %.0f ms)", self.name,
                self.position, len(present), skipped, batch.count, 1000 * (time.perf_counter() - began),
            )
        return batch, present

    # -- publishing

    async def _send(self, publisher: Publisher, batch: Prepared, present: set[str]) -> Acks:
        acks = Acks(asyncio.get_running_loop().create_future(), self.pub_seq, self.priv_seq)
        with bus(f"{self.name}: publish"):
            try:
                await publisher.send(batch.messages, present, acks)
            except BaseException:
                publisher.forget(acks)
                raise
        return acks

    async def _acked(self, batch: Prepared, publisher: Publisher, acks: Acks, dead: Any) -> None:
        with bus(f"{self.name}: acks"):
            try:
                async with asyncio.timeout(self.config.ack_timeout):
                    await acks.done
            except BaseException:
                publisher.forget(acks)
                raise
        if self.config.fault is not None:
            with bus(f"{self.name}: fault"):
                self.config.fault("acked", self.name)
        await self._set_aside(dead, batch.set_aside + [dead_letter(m, why) for m, why in acks.refused])
        self.pub_seq, self.priv_seq = acks.pub_seq, acks.priv_seq
        self.acked = batch.last_id
        self.unrecorded += batch.count
        self.stats.events += batch.count
        self.stats.messages += acks.sent - len(acks.refused)
        self.stats.duplicates += acks.duplicates
        self.stats.batches += 1

    async def _set_aside(self, dead: Any, letters: list[DeadLetter]) -> None:
        """Record the batch's dead letters (before the position moves past them), each
        with a loud error the first time (``wire.dead_letters.DeadLetters``)."""
        for letter in letters:
            with bus(f"{self.name}: dead letter"):
                recorded = await dead.record(letter)
            if recorded:
                self.stats.dead_letters += 1

    # -- the position record

    def _window(self) -> int:
        """The ``window`` recorded: at most ``batch_size`` acked notifications go
        unrecorded (:meth:`_record_due`), plus one batch in flight."""
        return 2 * self.config.batch_size

    def _record_due(self) -> bool:
        """Whether to write the position now. Not after every batch: under live load
        batches are small and many, and a write is a JetStream round trip in the
        path of the next batch. Recovery rescans the unrecorded ones (the window)."""
        if not self.unrecorded:
            return False
        return (self.unrecorded >= self.config.batch_size
                or time.monotonic() - self._recorded_at >= self.config.position_interval)

    async def _record(self, kv: Any) -> None:
        """Write the position (all acked notifications), if it moved."""
        if self.acked == self.position:
            return
        with bus(f"{self.name}: write position"):
            await self._save(kv, self.acked, self._window())
        self.position = self.acked
        self.unrecorded = 0
        self._recorded_at = time.monotonic()

    async def _save(self, kv: Any, position: int, window: int) -> None:
        value = PositionRecord(position, self.pub_seq, self.priv_seq, window).encode(at=time.time())
        if self.revision is None:
            self.revision = await kv.create(self.name, value)
        else:
            self.revision = await kv.update(self.name, value, last=self.revision)
        self.stats.records += 1
