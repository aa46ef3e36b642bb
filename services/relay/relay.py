"""The relay: each event store's notification log (the transactional outbox) onto
JetStream, every event exactly once, as public and private views (rules R32, R33).

What it publishes
    For notification ``n`` of store ``S`` (an event of table ``n.stream_id``):

    * the public view ``views.public(event)`` on ``studroom.pub.<table>`` in stream
      ``STUDROOM_PUBLIC``, ``Nats-Msg-Id: S:<n.id>``;
    * for each seat in ``views.owners_of_private_cards(event)``, that seat's copy
      ``views.private(event, seat)`` on ``studroom.priv.<player>.<table>`` in stream
      ``STUDROOM_PRIVATE``, ``Nats-Msg-Id: S:<n.id>:<seat>``.

    Bodies are ``msgspec.json`` of the view (with its ``"type"`` tag); headers also
    carry ``Studroom-Version`` (the event's version in its table's stream) and
    ``Studroom-Event`` (its type), plus ``Nats-Expected-Stream``. The store name ``S``
    is the store's schema (``studroom_p3``); one relay at a time per store.

Seat -> player
    Learnt from the relayed events themselves (``HandStarted.seats``, then
    ``PlayerSatDown``/``PlayerLeft``), per table. Whenever the relay meets a table at
    a version it has not followed (a restart, a recovery), it rebuilds that table's
    map from the store (``store.load(table)``, the events before that version), so a
    private card never goes to the wrong subject. A seat nobody holds stops the
    store's relaying (logged, retried) rather than guessing.

Position and exactly once
    Batches of ``batch_size`` notifications; one batch in flight per store. Every
    message of a batch is published (core NATS with a reply subject of the relay's
    own, :class:`Publisher`: JetStream acks each), then all acks are awaited; only then is the store's position record written to the KV bucket
    ``studroom_relay`` (key = store name): ``position`` (every copy of every
    notification up to it is stored), the highest stream sequences acked so far in
    each stream (``pub_seq``, ``priv_seq``) and ``window`` (the most notifications a
    batch may have had in flight). The record is written with an expected revision,
    so a second relay on the same store is noticed (its write fails; it re-reads).

    On (re)start, and after every lost connection, the relay reads the record and
    the ``window`` notifications after ``position`` (the batch that may have been in
    flight), and lists which of their messages JetStream already holds: a throwaway
    consumer, headers only, on the subjects of just those tables, from the recorded
    stream sequences on. It publishes only the missing ones and carries on. So
    correctness does not depend on the duplicate window: the stream's duplicate
    window (2 minutes) is a second line of defence, e.g. for messages a dropped
    connection delivers while the recovery scan runs.

    A connection is used until its first failure (no automatic reconnect, which
    would resend buffered messages behind a gap): the relay then closes it, backs
    off (0.1 s doubling to 2 s), connects anew and recovers as above. Each stream
    receives a connection's messages in order, so per table the public stream is in
    version order. (If a server rejects one message and accepts a later one on the
    same connection, which a single server does not do for these messages, the
    recovery fills the gap: nothing lost, nothing doubled, that one out of order.)

Latency
    Each store is polled every ``poll_interval`` (0.1 s) and read at once on a core
    NATS nudge on ``subjects.relay_nudge(store)`` (the table service publishes one
    after each commit). While a batch waits for its acks the next one is read from
    PostgreSQL. Throughput: a backlog of 50,000 events went out at about 18,000
    events/s (20,000 messages/s) on a 2-CPU machine that also ran NATS and
    PostgreSQL with ``js.publish_async`` (~50 us a message, the limit then);
    :class:`Publisher` takes ~16 us a message (36 us for ``publish_async`` in the
    same micro-benchmark).

Durability
    Streams use file storage with ``replicas`` copies (1 for the embedded server;
    production: ``--replicas 3``). JetStream acknowledges before fsync by default
    (see the 2025 Jepsen analysis of NATS 2.12): an R1 stream may lose the last
    acknowledged messages if the machine (not just the process) crashes; R3 makes
    that a majority loss. PostgreSQL stays the source of truth: if JetStream lost
    messages, delete the relay's KV record and its messages (or the streams) and the
    relay publishes the store again from the start. The relay logs an error when a
    stream is behind its position record, and refuses to go on (error, retried)
    when a store is shorter than its record (a reset store: its ids would collide).

Run
    ``python -m studroom.services.relay.relay --stores N`` (schemas ``studroom_p0`` ..
    ``studroom_p{N-1}``), or ``--schema NAME`` (repeatable); servers from
    ``STUDROOM_NATS_URL`` / ``STUDROOM_DATABASE_URL`` (embedded ones in
    ``STUDROOM_DATA_DIR`` when unset). From Python: :func:`serve_relay`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec
import nats
import nats.errors
import nats.js.errors
import psycopg
from eventsourcing.persistence import PersistenceError
from nats.js import api
from studroom.domain import views
from studroom.domain.events import HandStarted, PlayerLeft, PlayerSatDown
from ..wire import subjects
from ..runtime.settings import Settings
from ..store.event_store import EventStore, Notification, PostgresEventStore

__all__ = [
    "BusError",
    "Outbox",
    "Outgoing",
    "Prepared",
    "Publisher",
    "Relay",
    "RelayConfig",
    "RelayError",
    "SeatBook",
    "StoreRelay",
    "ensure_streams",
    "serve_relay",
]

log = logging.getLogger(__name__)

POSITION_VERSION = 1


@dataclass(frozen=True)
class RelayConfig:
    batch_size: int = 1000          # notifications per batch (one batch in flight per store)
    poll_interval: float = 0.1      # seconds between reads of an idle store
    ack_timeout: float = 10.0       # a batch's acks must all arrive within this
    duplicate_window: float = 120.0  # the streams' Nats-Msg-Id dedupe window, seconds
    replicas: int = 1               # stream and KV replicas (production: 3)
    backoff_initial: float = 0.1    # retries: 0.1 s, doubling up to backoff_max
    backoff_max: float = 2.0
    connect_timeout: float = 2.0
    request_timeout: float = 5.0    # JetStream API requests
    position_interval: float = 0.05  # seconds: how often a busy relay writes its position
    max_tables: int = 100_000       # seat maps kept (least recently used dropped)
    # Tests only: called as fault(point, store) at "acked" (a batch's acks are in,
    # its position not yet written); an exception there counts as a bus failure.
    fault: Callable[[str, str], None] | None = field(default=None, compare=False)


class RelayError(RuntimeError):
    """Something the relay must not guess about (e.g. a seat without a player)."""


class BusError(RuntimeError):
    """NATS failed (connection, timeout, refusal): the session is abandoned."""


class _Conflict(RuntimeError):
    """The position record changed under us: someone else relays this store."""


# ------------------------------------------------------------------- building copies


class TableSeats:
    """Who sits where at one table, as of ``version`` events."""

    __slots__ = ("hand", "seated", "version")

    def __init__(self) -> None:
        self.version = 0
        self.seated: dict[int, str] = {}
        self.hand: dict[int, str] = {}

    def apply(self, event: Any) -> None:
        if isinstance(event, HandStarted):
            self.hand = {s.seat: s.player for s in event.seats}
        elif isinstance(event, PlayerSatDown):
            self.seated[event.seat] = event.player
        elif isinstance(event, PlayerLeft):
            self.seated.pop(event.seat, None)
        self.version += 1

    def player(self, seat: int, table: str) -> str:
        player = self.hand.get(seat) or self.seated.get(seat)
        if player is None:
            msg = f"table {table!r} v{self.version}: nobody in seat {seat} for a private copy"
            raise RelayError(msg)
        return player


class SeatBook:
    """Seat -> player per table, rebuilt from the store for tables met mid-stream."""

    def __init__(self, load: Callable[[str], list[Any]], max_tables: int = 100_000) -> None:
        self._load = load
        self._tables: OrderedDict[str, TableSeats] = OrderedDict()
        self._max = max_tables
        self.rebuilds = 0

    def follows(self, notes: Sequence[Notification]) -> bool:
        """Whether ``notes`` can be turned into messages without reading the store
        (every table's first note here is its first event, or the next one known)."""
        seen: set[str] = set()
        for n in notes:
            if n.stream_id in seen:
                continue
            seen.add(n.stream_id)
            if n.version > 1:
                seats = self._tables.get(n.stream_id)
                if seats is None or seats.version != n.version - 1:
                    return False
        return True

    def before(self, table: str, version: int) -> TableSeats:
        """The seats of ``table`` just before its event ``version``."""
        seats = self._tables.get(table)
        if seats is not None and seats.version == version - 1:
            self._tables.move_to_end(table)
            return seats
        seats = TableSeats()
        if version > 1:
            events = self._load(table)
            if len(events) < version - 1:
                msg = f"table {table!r}: the store has {len(events)} events, expected {version}+"
                raise RelayError(msg)
            for event in events[: version - 1]:
                seats.apply(event)
            self.rebuilds += 1
        self._tables[table] = seats
        if len(self._tables) > self._max:
            self._tables.popitem(last=False)
        return seats


class Outgoing(NamedTuple):
    stream: str
    subject: str
    msg_id: str
    headers: dict[str, str]
    payload: bytes
    table: str


class Prepared(NamedTuple):
    """A batch read from a store: ``count`` notifications up to id ``last_id``."""

    first_id: int
    last_id: int
    count: int
    messages: list[Outgoing]


def _event_type(event: Any) -> str:
    tag = getattr(getattr(type(event), "__struct_config__", None), "tag", None)
    return tag if isinstance(tag, str) else type(event).__name__


class Outbox:
    """The messages of each notification of one store (pure but for the seat book's
    reloads through ``load``)."""

    def __init__(self, store_name: str, load: Callable[[str], list[Any]], max_tables: int = 100_000):
        self.name = subjects.check_name(store_name)
        self.seats = SeatBook(load, max_tables)
        self._encode = msgspec.json.Encoder().encode

    def messages(self, n: Notification) -> list[Outgoing]:
        event, table = n.event, n.stream_id
        seats = self.seats.before(table, n.version)
        kind, version = _event_type(event), str(n.version)
        msg_id = f"{self.name}:{n.id}"
        out = [
            Outgoing(
                subjects.PUBLIC_STREAM,
                subjects.public_events(table),
                msg_id,
                {
                    "Nats-Msg-Id": msg_id,
                    "Nats-Expected-Stream": subjects.PUBLIC_STREAM,
                    "Studroom-Version": version,
                    "Studroom-Event": kind,
                },
                self._encode(views.public(event)),
                table,
            )
        ]
        for seat in views.owners_of_private_cards(event):
            copy = views.private(event, seat)
            if copy is None:
                continue
            seat_id = f"{msg_id}:{seat}"
            out.append(
                Outgoing(
                    subjects.PRIVATE_STREAM,
                    subjects.private_events(seats.player(seat, table), table),
                    seat_id,
                    {
                        "Nats-Msg-Id": seat_id,
                        "Nats-Expected-Stream": subjects.PRIVATE_STREAM,
                        "Studroom-Version": version,
                        "Studroom-Event": kind,
                    },
                    self._encode(copy),
                    table,
                )
            )
        seats.apply(event)
        return out


# ------------------------------------------------------------------------ JetStream


def _stream_configs(config: RelayConfig) -> list[api.StreamConfig]:
    common: dict[str, Any] = {
        "storage": api.StorageType.FILE,
        "retention": api.RetentionPolicy.LIMITS,
        "discard": api.DiscardPolicy.OLD,
        "duplicate_window": config.duplicate_window,
        "num_replicas": config.replicas,
        "allow_direct": True,
    }
    return [
        api.StreamConfig(
            name=subjects.PUBLIC_STREAM,
            subjects=[subjects.all_public_events()],
            description="Studroom: public view of every table event (written by the relay)",
            **common,
        ),
        api.StreamConfig(
            name=subjects.PRIVATE_STREAM,
            subjects=[subjects.all_private_events()],
            description="Studroom: each player's private copies (written by the relay)",
            **common,
        ),
    ]


async def ensure_streams(js: Any, config: RelayConfig = RelayConfig()) -> Any:
    """Create (or bring up to date) the relay's streams and KV bucket; return the KV."""
    for wanted in _stream_configs(config):
        try:
            info = await js.stream_info(wanted.name)
        except nats.js.errors.NotFoundError:
            await js.add_stream(wanted)
            continue
        have = info.config
        subjects_ = sorted(set(have.subjects or []) | set(wanted.subjects or []))
        window = have.duplicate_window or 0
        if (
            subjects_ != sorted(have.subjects or [])
            or abs(window - config.duplicate_window) > 1e-3
            or not have.allow_direct
        ):
            await js.update_stream(
                have.evolve(
                    subjects=subjects_,
                    duplicate_window=config.duplicate_window,
                    allow_direct=True,
                )
            )
    try:
        return await js.key_value(subjects.RELAY_BUCKET)
    except nats.js.errors.BucketNotFoundError:
        return await js.create_key_value(
            bucket=subjects.RELAY_BUCKET,
            description="Studroom relay: position per event store",
            history=1,
            storage=api.StorageType.FILE,
            replicas=config.replicas,
            direct=True,
        )


async def _pause(event: asyncio.Event, seconds: float) -> None:
    """Wait until ``event`` is set, at most ``seconds``. (``asyncio.timeout`` rather
    than ``wait_for``: on Python 3.11 the latter can swallow a cancellation.)"""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()


def _raise_if_cancelled() -> None:
    """nats-py swallows a cancellation that arrives while it flushes
    (``Client._flush_pending``, e.g. inside ``publish`` or ``subscribe``); the task's
    cancel count still tells. Checked after every NATS operation."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


@contextlib.contextmanager
def _bus(what: str) -> Iterator[None]:
    """Turn any failure of a NATS operation into BusError (and notice a cancellation
    nats-py swallowed)."""
    try:
        yield
    except (asyncio.CancelledError, BusError, _Conflict):
        raise
    except nats.js.errors.KeyWrongLastSequenceError as error:
        raise _Conflict(f"{what}: {error!r}") from error
    except Exception as error:
        raise BusError(f"{what}: {error!r}") from error
    _raise_if_cancelled()


# ------------------------------------------------------------------------ publishing


class AckError(msgspec.Struct):
    code: int = 0
    err_code: int = 0
    description: str = ""


class PubAck(msgspec.Struct):
    """JetStream's answer to a published message: where it was stored, or why not."""

    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    error: AckError | None = None


_decode_ack = msgspec.json.Decoder(PubAck).decode


class Acks:
    """The acknowledgements of one batch: ``done`` resolves when the last one is in
    (or with the first error); the highest stream sequences and duplicates are
    counted as they arrive."""

    __slots__ = ("done", "duplicates", "left", "priv_seq", "pub_seq", "sent")

    def __init__(self, done: asyncio.Future[None], pub_seq: int, priv_seq: int) -> None:
        self.done = done
        self.sent = 0
        self.left = 0
        self.pub_seq = pub_seq
        self.priv_seq = priv_seq
        self.duplicates = 0

    def take(self, ack: PubAck) -> None:
        self.duplicates += ack.duplicate
        if ack.stream == subjects.PUBLIC_STREAM:
            self.pub_seq = max(self.pub_seq, ack.seq)
        else:
            self.priv_seq = max(self.priv_seq, ack.seq)
        self.left -= 1
        if self.left == 0 and not self.done.done():
            self.done.set_result(None)

    def fail(self, error: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(error)


class Publisher:
    """Publishes to JetStream as core NATS messages whose reply subject is one of its
    own (``<inbox>.<n>``), and reads every ack on one subscription with msgspec.

    It is what ``js.publish_async`` does on the wire (the server acks a message
    published with a reply subject), without its per-message NUID, future, done
    callback and coroutine, nor json and dataclasses per ack: less than half the CPU
    per message. One per connection (a session); its acks are lost with it."""

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.prefix = f"{nc.new_inbox()}."
        self._waiting: dict[str, Acks] = {}
        self._next = 0
        self._sub: Any = None

    async def start(self) -> None:
        self._sub = await self.nc.subscribe(self.prefix + "*", cb=self._on_ack)

    async def send(self, messages: Sequence[Outgoing], skip: set[str], acks: Acks) -> None:
        """Publish ``messages`` (but those whose id is in ``skip``); ``acks`` counts
        their acknowledgements."""
        publish, waiting, prefix = self.nc.publish, self._waiting, self.prefix
        for m in messages:
            if m.msg_id in skip:
                continue
            self._next += 1
            token = str(self._next)
            waiting[token] = acks
            acks.sent += 1
            acks.left += 1
            await publish(m.subject, m.payload, reply=prefix + token, headers=m.headers)
        if acks.left == 0 and not acks.done.done():
            acks.done.set_result(None)

    def forget(self, acks: Acks) -> None:
        """Stop waiting for the acks of a batch given up."""
        for token in [t for t, a in self._waiting.items() if a is acks]:
            del self._waiting[token]

    async def _on_ack(self, msg: Any) -> None:
        acks = self._waiting.pop(msg.subject[len(self.prefix):], None)
        if acks is None:
            return
        if msg.headers and msg.headers.get("Status"):
            # e.g. 503: no stream listens on the subject
            acks.fail(BusError(f"publish refused: status {msg.headers.get('Status')} "
                               f"{msg.headers.get('Description', '')}".rstrip()))
            return
        try:
            ack = _decode_ack(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            acks.fail(BusError(f"bad publish ack {msg.data[:200]!r}: {error}"))
            return
        if ack.error is not None:
            acks.fail(BusError(f"publish refused: {ack.error.code} {ack.error.err_code} "
                               f"{ack.error.description}"))
            return
        acks.take(ack)


# ---------------------------------------------------------------------- one store


@dataclass
class StoreStats:
    events: int = 0             # notifications relayed (their messages acked)
    messages: int = 0           # messages published (acked)
    duplicates: int = 0         # acks that said "duplicate" (the dedupe window at work)
    skipped: int = 0            # messages found already stored by a recovery scan
    recoveries: int = 0
    batches: int = 0
    records: int = 0            # position records written


class StoreRelay:
    """Relays one event store."""

    def __init__(self, store: EventStore, name: str, config: RelayConfig = RelayConfig()):
        self.store = store
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
        self._prepare_lock = threading.Lock()
        self._wake: asyncio.Event | None = None
        reader = getattr(store, "notification_reader", None)
        self._reader = reader() if reader is not None else None

    # -- reading

    async def prepare(self, start: int, limit: int) -> Prepared:
        """The next batch: notifications from ``start`` and their messages. Read on
        the event loop (an asyncio connection: the relay makes hundreds of small reads
        a second under live load, a thread hop each cost a fifth of its CPU); the
        messages are built here too unless a seat map must be loaded from the store
        first (a restart, a table met mid-stream): that goes to a thread."""
        if self._reader is not None:
            notes = await self._reader.read(start, limit)
        else:
            notes = await asyncio.to_thread(self.store.read_notifications, start, limit)
        if self.outbox.seats.follows(notes):
            messages = self._messages(notes)
        else:
            messages = await asyncio.to_thread(self._messages, notes)
        last = notes[-1].id if notes else start - 1
        return Prepared(start, last, len(notes), messages)

    def _messages(self, notes: Sequence[Notification]) -> list[Outgoing]:
        with self._prepare_lock:    # a cancelled prefetch's thread may still be running
            messages: list[Outgoing] = []
            for n in notes:
                messages += self.outbox.messages(n)
            return messages

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()

    # -- waking

    @property
    def wake(self) -> asyncio.Event:
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake

    async def on_nudge(self, _msg: Any) -> None:
        self.wake.set()

    async def _idle(self) -> None:
        """Wait for a nudge; not longer than the position record may wait."""
        wait = self.config.position_interval if self.unrecorded else self.config.poll_interval
        await _pause(self.wake, wait)

    # -- the loop

    async def run(self, js: Any, kv: Any, stop: asyncio.Event, publisher: Publisher) -> None:
        """Relay until ``stop``; raises BusError when NATS fails (the caller
        reconnects); store errors are retried here with backoff."""
        backoff = self.config.backoff_initial
        while not stop.is_set():
            try:
                await self._recover_and_follow(js, kv, stop, publisher)
            except (BusError, asyncio.CancelledError):
                raise
            except Exception as error:
                level = logging.WARNING if isinstance(error, _Conflict) else logging.ERROR
                expected = (_Conflict, RelayError, OSError, PersistenceError, psycopg.Error)
                log.log(level, "relay %s: %r; retrying in %.1fs", self.name, error, backoff,
                        exc_info=not isinstance(error, expected))
                await _pause(stop, backoff)
                backoff = min(backoff * 2, self.config.backoff_max)

    async def _recover_and_follow(self, js: Any, kv: Any, stop: asyncio.Event, publisher: Publisher) -> None:
        batch, present = await self.recover(js, kv)
        prefetch: asyncio.Future[Prepared] | None = None
        try:
            while True:
                _raise_if_cancelled()
                if batch.count:
                    acks = await self._send(publisher, batch, present)
                    present = set()
                    if stop.is_set():
                        prefetch = None
                    else:
                        self.wake.clear()
                        prefetch = asyncio.ensure_future(
                            self.prepare(batch.last_id + 1, self.config.batch_size)
                        )
                    await self._acked(batch, publisher, acks)
                    if self._record_due():
                        await self._record(kv)
                if stop.is_set():
                    await self._record(kv)
                    return
                if prefetch is None:
                    self.wake.clear()
                    batch = await self.prepare(self.acked + 1, self.config.batch_size)
                else:
                    batch, prefetch = await prefetch, None
                if not batch.count:
                    if self._record_due():
                        await self._record(kv)
                    await self._idle()
        finally:
            if prefetch is not None:
                prefetch.cancel()  # a thread building messages finishes on its own (locked)

    # -- recovery

    async def recover(self, js: Any, kv: Any) -> tuple[Prepared, set[str]]:
        """Read the position record; return the batch that may have been in flight
        and the ids of its messages JetStream already holds."""
        self.stats.recoveries += 1
        began = time.perf_counter()
        record: dict[str, int] = {}
        with _bus(f"{self.name}: read position"):
            try:
                entry = await kv.get(self.name)
            except nats.js.errors.KeyNotFoundError:
                self.revision = None
            else:
                self.revision = entry.revision
                record = json.loads(entry.value or b"{}")
        self.position = self.acked = int(record.get("position", 0))
        self.unrecorded = 0
        self.pub_seq = int(record.get("pub_seq", 0))
        self.priv_seq = int(record.get("priv_seq", 0))
        window = max(int(record.get("window", 0)), self.config.batch_size)
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
        batch = await self.prepare(self.position + 1, window)
        present: set[str] = set()
        with _bus(f"{self.name}: recovery scan"):
            await self._check_stream(js, subjects.PUBLIC_STREAM, self.pub_seq)
            await self._check_stream(js, subjects.PRIVATE_STREAM, self.priv_seq)
            by_stream: dict[str, set[str]] = {}
            for m in batch.messages:
                by_stream.setdefault(m.stream, set()).add(m.table)
            for stream, tables in by_stream.items():
                if stream == subjects.PUBLIC_STREAM:
                    filters, seq = [subjects.public_events(t) for t in sorted(tables)], self.pub_seq
                else:
                    filters, seq = [subjects.table_private_events(t) for t in sorted(tables)], self.priv_seq
                present |= await self._stored_ids(js, stream, filters, seq)
            # Write the record (a claim on the store, and a window at least this big).
            await self._save(kv, self.position, max(window, self._window()))
            self._recorded_at = time.monotonic()
        wanted = {m.msg_id for m in batch.messages}
        present &= wanted
        self.stats.skipped += len(present)
        if present or batch.count:
            log.info(
                "relay %s: resuming after notification %d; %d of the next %d messages "
                "already stored (recovery took %.0f ms)", self.name, self.position, len(present),
                len(batch.messages), 1000 * (time.perf_counter() - began),
            )
        return batch, present

    async def _check_stream(self, js: Any, stream: str, seq: int) -> None:
        if not seq:
            return
        info = await js.stream_info(stream)
        if info.state.last_seq < seq:
            log.error(
                "relay %s: stream %s ends at %d but this store's messages reached %d: "
                "JetStream lost messages; to publish the store again delete key %r of "
                "bucket %s and the streams' messages",
                self.name, stream, info.state.last_seq, seq, self.name, subjects.RELAY_BUCKET,
            )

    async def _stored_ids(self, js: Any, stream: str, filters: list[str], after_seq: int) -> set[str]:
        """Nats-Msg-Id of this store's messages on ``filters`` after ``after_seq``."""
        name = f"relay_scan_{uuid.uuid4().hex}"
        config = api.ConsumerConfig(
            name=name,
            filter_subjects=filters,
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=after_seq + 1,
            ack_policy=api.AckPolicy.NONE,
            headers_only=True,
            mem_storage=True,
            num_replicas=1,
            inactive_threshold=30.0,
        )
        info = await js.add_consumer(stream, config=config)
        ids: set[str] = set()
        try:
            pending = info.num_pending
            if pending:
                sub = await js.pull_subscribe_bind(consumer=name, stream=stream)
                try:
                    got = 0
                    while got < pending:
                        msgs = await sub.fetch(min(pending - got, 1000), timeout=self.config.request_timeout)
                        got += len(msgs)
                        for msg in msgs:
                            msg_id = (msg.headers or {}).get("Nats-Msg-Id", "")
                            if msg_id.startswith(self.name + ":"):
                                ids.add(msg_id)
                finally:
                    await sub.unsubscribe()
        finally:
            with contextlib.suppress(Exception):
                await js.delete_consumer(stream, name)
        return ids

    # -- publishing

    async def _send(self, publisher: Publisher, batch: Prepared, present: set[str]) -> Acks:
        acks = Acks(asyncio.get_running_loop().create_future(), self.pub_seq, self.priv_seq)
        with _bus(f"{self.name}: publish"):
            try:
                await publisher.send(batch.messages, present, acks)
            except BaseException:
                publisher.forget(acks)
                raise
        return acks

    async def _acked(self, batch: Prepared, publisher: Publisher, acks: Acks) -> None:
        with _bus(f"{self.name}: acks"):
            try:
                async with asyncio.timeout(self.config.ack_timeout):
                    await acks.done
            except BaseException:
                publisher.forget(acks)
                raise
        if self.config.fault is not None:
            with _bus(f"{self.name}: fault"):
                self.config.fault("acked", self.name)
        self.pub_seq, self.priv_seq = acks.pub_seq, acks.priv_seq
        self.acked = batch.last_id
        self.unrecorded += batch.count
        self.stats.events += batch.count
        self.stats.messages += acks.sent
        self.stats.duplicates += acks.duplicates
        self.stats.batches += 1

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
        with _bus(f"{self.name}: write position"):
            await self._save(kv, self.acked, self._window())
        self.position = self.acked
        self.unrecorded = 0
        self._recorded_at = time.monotonic()

    async def _save(self, kv: Any, position: int, window: int) -> None:
        value = json.dumps(
            {
                "v": POSITION_VERSION,
                "position": position,
                "pub_seq": self.pub_seq,
                "priv_seq": self.priv_seq,
                "window": window,
                "at": time.time(),
            }
        ).encode()
        if self.revision is None:
            self.revision = await kv.create(self.name, value)
        else:
            self.revision = await kv.update(self.name, value, last=self.revision)
        self.stats.records += 1


# ------------------------------------------------------------------------- sessions


class Relay:
    """All stores of one relay process over one NATS connection at a time."""

    def __init__(
        self,
        nats_url: str,
        stores: Sequence[StoreRelay],
        config: RelayConfig = RelayConfig(),
    ) -> None:
        self.servers = [u.strip() for u in nats_url.split(",") if u.strip()]
        self.stores = list(stores)
        self.config = config
        self.sessions = 0
        self.connected = asyncio.Event()
        self.connected_at: float | None = None

    async def serve(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        backoff = self.config.backoff_initial
        waker = asyncio.ensure_future(self._wake_on(stop))
        try:
            while not stop.is_set():
                _raise_if_cancelled()
                started = loop.time()
                try:
                    await self._session(stop)
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    if self.connected_at is not None and self.connected_at >= started:
                        backoff = self.config.backoff_initial   # it was up: retry soon
                    log.warning("relay: NATS session ended: %s; reconnecting in %.1fs", error, backoff,
                                exc_info=not isinstance(error, (BusError, OSError, nats.errors.Error)))
                    await _pause(stop, backoff)
                    backoff = min(backoff * 2, self.config.backoff_max)
        finally:
            waker.cancel()

    async def _wake_on(self, stop: asyncio.Event) -> None:
        await stop.wait()
        for store in self.stores:
            store.wake.set()

    async def _session(self, stop: asyncio.Event) -> None:
        lost = asyncio.Event()

        async def on_lost() -> None:
            lost.set()

        async def on_error(error: Exception) -> None:
            log.debug("relay: NATS error: %r", error)

        with _bus("connect"):
            nc = await nats.connect(
                servers=self.servers,
                name="studroom-relay",
                allow_reconnect=False,
                max_reconnect_attempts=0,
                connect_timeout=self.config.connect_timeout,
                disconnected_cb=on_lost,
                closed_cb=on_lost,
                error_cb=on_error,
            )
        tasks: list[asyncio.Future[Any]] = []
        try:
            self.sessions += 1
            with _bus("setup"):
                js = nc.jetstream(
                    timeout=self.config.request_timeout, publish_async_max_pending=1_000_000
                )
                kv = await ensure_streams(js, self.config)
                publisher = Publisher(nc)
                await publisher.start()
                for store in self.stores:
                    await nc.subscribe(subjects.relay_nudge(store.name), cb=store.on_nudge)
            self.connected.set()
            self.connected_at = asyncio.get_running_loop().time()
            lost_task = asyncio.ensure_future(lost.wait())
            tasks = [asyncio.ensure_future(s.run(js, kv, stop, publisher)) for s in self.stores]
            tasks.append(lost_task)
            running = set(tasks) - {lost_task}
            while running:
                _raise_if_cancelled()
                done, _ = await asyncio.wait(running | {lost_task}, return_when=asyncio.FIRST_COMPLETED)
                if lost_task in done:
                    raise BusError("connection to NATS lost")
                for task in done:
                    task.result()
                running -= done
        finally:
            self.connected.clear()
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await nc.close()

    def stats(self) -> dict[str, StoreStats]:
        return {s.name: s.stats for s in self.stores}


def _open_store(database_url: str, schema: str) -> PostgresEventStore:
    return PostgresEventStore(database_url, schema=schema)


async def serve_relay(
    settings: Settings,
    *,
    store_schemas: list[str],
    stop: asyncio.Event | None = None,
    config: RelayConfig | None = None,
    on_ready: Callable[[Relay], None] | None = None,
) -> Relay:
    """Relay the stores in ``store_schemas`` (one PostgreSQL schema each) until
    ``stop`` is set (or the task is cancelled). Returns the relay (its stats)."""
    from ..runtime.embedded import servers

    config = config or RelayConfig()
    stop = stop or asyncio.Event()
    if not store_schemas:
        raise ValueError("no store to relay")
    for schema in store_schemas:
        subjects.check_name(schema)
    with contextlib.ExitStack() as exits:
        if settings.nats_url is None or settings.database_url is None:
            nats_url, database_url = exits.enter_context(servers(settings))
        else:
            nats_url, database_url = settings.nats_url, settings.database_url
        stores: list[PostgresEventStore] = []
        try:
            backoff = config.backoff_initial
            for schema in store_schemas:
                while True:
                    try:
                        stores.append(await asyncio.to_thread(_open_store, database_url, schema))
                        break
                    except Exception as error:
                        log.warning("relay: cannot open store %s: %r; retrying", schema, error)
                        await _pause(stop, backoff)
                        if stop.is_set():
                            raise
                        backoff = min(backoff * 2, config.backoff_max)
            relay = Relay(
                nats_url,
                [StoreRelay(store, schema, config) for store, schema in zip(stores, store_schemas, strict=True)],
                config,
            )
            if on_ready is not None:
                on_ready(relay)
            try:
                await relay.serve(stop)
            finally:
                for store_relay in relay.stores:
                    await store_relay.close()
            return relay
        finally:
            for store in stores:
                with contextlib.suppress(Exception):
                    store.close()
