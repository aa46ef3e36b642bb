"""The timer service: every turn ends, on time, exactly once (rules R5, R18, R19, R20).

    python -m studroom.services.timer.service [--instance-id ID]
    studroom serve timer [--instance-id ID]

A process of its own, a plain NATS client.  It reads what every client reads, the
relay's public events, and sends what any client could send, ``Timeout`` commands.

The flow
    1. A durable JetStream consumer ``studroom_timer`` on the relay's stream
       ``STUDROOM_PUBLIC`` (subjects ``studroom.pub.>``) sees every public event.  The
       ``Studroom-Event`` header tells the type without decoding; everything but
       ``TurnStarted`` and ``TimedOut`` is acked and skipped.
    2. ``TurnStarted(turn, seat, kind, deadline_ms)`` of table ``T``: the service
       publishes ONE JetStream message schedule on ``studroom.timer.sched.T`` (stream
       ``STUDROOM_TIMERS``) with the headers ``Nats-Schedule: @at <deadline, RFC 3339
       UTC, milliseconds>`` and ``Nats-Schedule-Target: studroom.timer.fire.T``; the
       body is :class:`TimerPayload` (table, turn, seat, kind, deadline -- no card, no
       seed).  A table has one open turn at a time and the schedule subject has one
       pending schedule at a time: publishing the next turn's schedule REPLACES the
       previous turn's (the server rolls the subject up).
    3. At the deadline the NATS server publishes the body on
       ``studroom.timer.fire.T``.  A second durable consumer, ``studroom_timer_fire``,
       receives it and the service sends ``Timeout(turn=..., seat=...)`` to the table
       (:class:`~studroom.services.players.client.TableClient`, request/reply on
       ``studroom.cmd.T``).  The message is acked AFTER the table's reply:
       ``ok`` (the player was timed out: the table records ``TimedOut``/``AnteSkipped``
       and starts the next turn), ``stale_timeout`` (the player acted in time: R20, the
       table changed nothing; counted, not an error) or ``duplicate_command`` (this
       very timeout was carried out already, e.g. the reply was lost: counted).
       ``conflict``/``unavailable``/no reply/no responders: ``nak`` with a growing delay
       (0.2 s .. 5 s), redelivered until the table service answers.
    4. ``TimedOut`` events seen on the public stream update the lobby counter (below).

Why JetStream message schedules (and not a home-made timer wheel)
    * Durability: a pending deadline IS a message in a file-backed stream.  Stopping or
      SIGKILLing the timer service loses nothing; restarting the NATS server loses
      nothing either (the schedule is reloaded from the store).  A timer wheel in this
      process's memory would die with it, and rebuilding it would mean re-reading
      history to find the open turns.
    * Replacement per subject = one timer per table: the next turn's schedule replaces
      the previous one atomically in the server.  No cancel messages, no timer ids.
    * Overdue timers fire on return: a schedule whose time passed while nobody listened
      (timer service down, NATS down) is published when the server runs again, into the
      fire subject, where the durable consumer keeps it until a timer instance acks it.
      A time already in the past when it is published fires at once.
    * Horizontally scalable: any number of instances pull from the SAME two durable pull
      consumers (a JetStream pull consumer hands each message to one puller only).  Each
      fired timer is processed by one instance; if that instance dies before its ack, the
      server redelivers the message after ``ack_wait`` (10 s; public events 5 s) to
      another instance.  The table's stale check makes every redelivery harmless: a
      ``Timeout`` for a turn that is over is refused (R20), and ``command_id =
      "timeout-<turn>"`` makes a second copy of a timeout that went through a
      ``duplicate_command``.  The consumers (and stream, bucket) are created by
      whichever instance starts first, recreated if deleted (e.g. the relay's stream
      was rebuilt).
    * Never early, at most about a quarter second late: the server's scheduler wakes
      at the earliest due schedule but at most every 250 ms (``nats-server``
      ``scheduler.go``: "make sure we aren't firing too often"), so a timer fires
      0..~250 ms after its deadline, plus one request to the table (``studroom bench
      timer`` measures it).  For turn clocks of seconds (R18: 10 s) that is fine; the
      table takes the moment the Timeout arrives as the time of the timeout.

Nothing times out twice
    * The table refuses a timeout for a turn that is over (R20, ``stale_timeout``);
    * each turn gets at most one live schedule (its table's subject), replaced by the
      next turn's;
    * an OLDER turn never replaces a newer turn's pending schedule: before publishing,
      the service reads the subject's pending schedule (direct get) and publishes only
      if its own turn is newer, with ``Nats-Expected-Last-Subject-Sequence`` set to what
      it read (compare-and-set: two instances, or a redelivered old ``TurnStarted``,
      cannot overwrite a newer turn -- the loser re-reads and skips).

Ordering and scale
    Public events of one table are handled one after the other inside an instance (a
    lock per table), different tables concurrently; the compare-and-set above orders
    them across instances.  Pull requests are kept open continuously (what newer NATS
    clients call ``consume``): each message is handled the moment it arrives, and no
    more messages are asked for than ``max_inflight`` (back pressure).  ``STUDROOM_TIMERS``
    uses work-queue retention: a fired timer leaves the stream when it is acked, a
    pending schedule leaves it when it fires or is replaced, so the stream holds at most
    one schedule per table with an open turn.  Production: ``--replicas 3``.

Start-up
    The service creates ``STUDROOM_TIMERS``, the KV bucket and its consumers if missing
    (idempotent; any instance may do it) and waits for the relay's ``STUDROOM_PUBLIC``.
    A NEW ``studroom_timer`` consumer starts at the beginning of the public stream
    (``DeliverPolicy.ALL``): turns that started before the first timer instance ever ran
    are timed out too; old turns just give ``stale_timeout``.  A restarted instance
    resumes where the durable consumer stands.

Visible to clients and the lobby
    * ``TurnStarted.deadline_ms`` (public) drives the clients' countdowns.
    * KV bucket ``studroom_timeouts`` (JetStream key/value, watchable): key = table id,
      value = JSON ``{"timeouts": <total>, "last_ms": <when the last one was relayed>,
      "recent": [{"turn", "seat", "outcome", "ms"}, ... the last 20]}``, updated with
      compare-and-set from the ``TimedOut`` events of the public stream (a redelivered
      event is recognised by its turn and not counted twice).  A lobby projection
      watches the bucket to list "tables whose players keep timing out" (e.g. the
      number of ``recent`` entries of the last ten minutes).

Nothing secret passes through here: the public stream has no hidden card and no seed
before its time (R33), and the timer messages carry table, turn, seat, kind, deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec
import nats
import nats.errors
import nats.js.errors
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from studroom.domain.commands import Timeout
from studroom.domain.errors import NO_HAND, STALE_TIMEOUT
from ..wire import protocol, subjects
from ..runtime.settings import Settings

log = logging.getLogger("studroom.timer")

TURNS_CONSUMER = "studroom_timer"            # on STUDROOM_PUBLIC: TurnStarted, TimedOut
FIRES_CONSUMER = "studroom_timer_fire"       # on STUDROOM_TIMERS: fired timers
EVENT_HEADER = "Studroom-Event"
WANTED_EVENTS = frozenset({"TurnStarted", "TimedOut"})
RECENT_TIMEOUTS = 20                         # entries kept per table in the KV value
# The turn this timer was set for is over (answered, or its hand ended): drop the timer.
STALE_CODES = frozenset({STALE_TIMEOUT, NO_HAND})
WRONG_LAST_SEQUENCE = 10071                  # JetStream API error code


class TimerPayload(msgspec.Struct, frozen=True, omit_defaults=True):
    """The body of a schedule and of the message it fires."""

    table_id: str
    turn: int
    deadline_ms: int
    seat: int | None = None
    kind: str = "act"


class _Head(msgspec.Struct, frozen=True):
    """The few fields of a public event this service reads (others are ignored)."""

    type: str
    turn: int | None = None
    seat: int | None = None
    kind: str | None = None
    deadline_ms: int | None = None
    outcome: str | None = None


_head_decoder = msgspec.json.Decoder(_Head)
_payload_decoder = msgspec.json.Decoder(TimerPayload)
_encoder = msgspec.json.Encoder()


def schedule_time(deadline_ms: int) -> str:
    """``@at`` with the deadline in RFC 3339 UTC, millisecond precision."""
    when = datetime.fromtimestamp(deadline_ms / 1000, UTC)
    return "@at " + when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{deadline_ms % 1000:03d}Z"


def schedule_headers(table_id: str, deadline_ms: int, expected_seq: int | None = None) -> dict[str, str]:
    headers = {
        "Nats-Schedule": schedule_time(deadline_ms),
        "Nats-Schedule-Target": subjects.timer_fire(table_id),
    }
    if expected_seq is not None:
        headers["Nats-Expected-Last-Subject-Sequence"] = str(expected_seq)
    return headers


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _stamp_ms(msg: Any) -> int | None:
    """The JetStream timestamp of a consumed message, in ms since the epoch."""
    try:
        return int(msg.metadata.timestamp.timestamp() * 1000)
    except Exception:  # noqa: BLE001 (not a JetStream message)
        return None


# ----------------------------------------------------------------------------- stats


@dataclass
class TimerStats:
    """What one instance did (logged every ``stats_every`` seconds and at the end)."""

    turns_seen: int = 0          # TurnStarted events read
    scheduled: int = 0           # schedules published
    superseded: int = 0          # TurnStarted older than the pending schedule: skipped
    fired: int = 0               # fired timers received
    timed_out: int = 0           # Timeout accepted by the table
    stale: int = 0               # stale_timeout: the player acted in time (R20)
    duplicate: int = 0           # duplicate_command: this timeout went through before
    retried: int = 0             # nak'ed for redelivery (no reply, conflict, ...)
    timeouts_counted: int = 0    # TimedOut events counted in the KV bucket
    errors: dict[str, int] = field(default_factory=dict)
    # fire lateness, ms: server's fire stamp - deadline; reply received - deadline
    fire_lateness_ms: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))
    done_lateness_ms: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))

    def error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1

    def line(self) -> str:
        errors = ", ".join(f"{k}={v}" for k, v in sorted(self.errors.items())) or "none"
        return (f"turns={self.turns_seen} scheduled={self.scheduled} superseded={self.superseded} "
                f"fired={self.fired} timed_out={self.timed_out} stale={self.stale} "
                f"duplicate={self.duplicate} retried={self.retried} "
                f"timeouts_counted={self.timeouts_counted} errors: {errors}")


# ----------------------------------------------------------------- continuous pulling


class PullLoop:
    """Keeps pull requests open on a durable pull consumer and hands every message to
    ``handler`` as a task the moment it arrives (what newer clients call ``consume``).

    At most ``max_inflight`` messages are requested or being handled at once.  A pull
    request lives ``expires`` seconds with idle heartbeats every ``heartbeat`` seconds;
    when neither a message nor a heartbeat came for three heartbeats (a reconnect, a
    server restart), the requests are considered lost and asked for again.  Several
    processes may run a PullLoop on the same consumer: the server gives each message
    to one of them.
    """

    def __init__(
        self,
        nc: Any,
        stream: str,
        consumer: str,
        handler: Callable[[Any], Awaitable[None]],
        *,
        max_inflight: int = 512,
        batch: int = 256,
        expires: float = 5.0,
        heartbeat: float = 1.0,
        recreate: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.nc = nc
        self.stream = stream
        self.consumer = consumer
        self.handler = handler
        self.max_inflight = max_inflight
        self.batch = min(batch, max_inflight)
        self.expires = expires
        self.heartbeat = heartbeat
        self.recreate = recreate
        self.requested = 0                 # asked for, not delivered yet
        self.handling = 0                  # delivered, handler running
        self._wake = asyncio.Event()
        self._last_seen = time.monotonic()
        self._tasks: set[asyncio.Task[None]] = set()
        self._reset = False

    def reset(self) -> None:
        """Forget the open pull requests (after a reconnect): ask again."""
        self._reset = True
        self._wake.set()

    async def _on_msg(self, msg: Any) -> None:
        self._last_seen = time.monotonic()
        status = msg.headers.get("Status") if msg.headers else None
        if status:
            if status == "100":                      # idle heartbeat / flow control
                if msg.reply:
                    await self.nc.publish(msg.reply, b"")
                return
            description = msg.headers.get("Description", "")
            if status in ("408", "409", "404"):     # request expired / ended
                left = msg.headers.get("Nats-Pending-Messages")
                if left is not None and left.isdigit():
                    self.requested = max(0, self.requested - int(left))
                else:
                    self.requested = 0
                if status == "409" and "Consumer Deleted" in description:
                    self._reset = True
                elif status == "409":
                    log.debug("%s: pull request ended: %s", self.consumer, description)
            else:                                   # 503 no responders: no such consumer
                log.info("%s: pull request refused: %s %s", self.consumer, status, description)
                self.requested = 0
                self._reset = True
            self._wake.set()
            return
        self.requested = max(0, self.requested - 1)
        self.handling += 1
        task = asyncio.create_task(self._handle(msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, msg: Any) -> None:
        try:
            await self.handler(msg)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: handler failed; the message will be redelivered", self.consumer)
        finally:
            self.handling -= 1
            self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        inbox = self.nc.new_inbox()
        sub = await self.nc.subscribe(inbox, cb=self._on_msg)
        next_api = f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{self.consumer}"
        stopper = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                silent = time.monotonic() - self._last_seen
                if self._reset or (self.requested and silent > 3 * self.heartbeat):
                    if self._reset and self.recreate is not None:
                        try:
                            await self.recreate()     # the consumer (or its stream) is gone
                        except Exception as e:  # noqa: BLE001 (stream not back yet: later)
                            log.info("%s: cannot create the consumer yet: %r", self.consumer, e)
                            with contextlib.suppress(TimeoutError):
                                await asyncio.wait_for(stop.wait(), self.heartbeat)
                            continue
                    self._reset = False
                    self.requested = 0
                    self._last_seen = time.monotonic()
                free = self.max_inflight - self.requested - self.handling
                if free >= self.batch or (self.requested == 0 and free > 0):
                    ask = min(free, self.batch)
                    request = {"batch": ask, "expires": int(self.expires * 1e9),
                               "idle_heartbeat": int(self.heartbeat * 1e9)}
                    try:
                        await self.nc.publish(next_api, json.dumps(request).encode(), reply=inbox)
                        self.requested += ask
                        self._last_seen = time.monotonic()
                    except Exception as e:  # noqa: BLE001 (disconnected: try again soon)
                        log.debug("%s: pull request not sent: %r", self.consumer, e)
                self._wake.clear()
                waiter = asyncio.create_task(self._wake.wait())
                await asyncio.wait({waiter, stopper}, timeout=self.heartbeat,
                                   return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
        finally:
            stopper.cancel()
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait for the handlers that are running (messages not acked are redelivered)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in list(self._tasks):
            task.cancel()


# --------------------------------------------------------------------- JetStream setup


async def ensure_timer_stream(js: Any, replicas: int = 1) -> None:
    """``STUDROOM_TIMERS``: schedules on, work queue, file storage (idempotent)."""
    config = StreamConfig(
        name=subjects.TIMER_STREAM,
        subjects=[subjects.all_timer_schedules(), subjects.all_timer_fires()],
        retention=RetentionPolicy.WORK_QUEUE,
        storage=StorageType.FILE,
        num_replicas=replicas,
        allow_msg_schedules=True,
        allow_direct=True,
        description="studroom timer service: one pending turn timer per table, fired timers",
    )
    try:
        await js.add_stream(config)
    except nats.js.errors.BadRequestError as e:
        # It exists with other settings (e.g. another replica count): use it as is.
        info = await js.stream_info(subjects.TIMER_STREAM)
        if not info.config.allow_msg_schedules:
            raise RuntimeError(f"{subjects.TIMER_STREAM} exists without message schedules") from e
        log.info("%s exists with other settings; using it: %s", subjects.TIMER_STREAM, e.description)


async def ensure_consumer(js: Any, stream: str, config: ConsumerConfig) -> None:
    try:
        await js.add_consumer(stream, config)
    except nats.js.errors.BadRequestError as e:
        # It exists with other settings (an older version of this service): keep it.
        await js.consumer_info(stream, config.durable_name)
        log.info("consumer %s exists with other settings; using it: %s", config.durable_name, e.description)


def turns_consumer_config(ack_wait: float = 5.0) -> ConsumerConfig:
    return _shared_consumer(TURNS_CONSUMER, subjects.all_public_events(), ack_wait,
                            "studroom timer service: TurnStarted -> schedules, TimedOut -> lobby counts")


def fires_consumer_config(ack_wait: float = 10.0) -> ConsumerConfig:
    return _shared_consumer(FIRES_CONSUMER, subjects.all_timer_fires(), ack_wait,
                            "studroom timer service: fired turn timers -> Timeout commands")


def _shared_consumer(durable: str, filter_subject: str, ack_wait: float, description: str) -> ConsumerConfig:
    """A durable pull consumer every instance fetches from: each message goes to one of
    them, and is redelivered (never dropped) if it is not acknowledged in time."""
    return ConsumerConfig(
        durable_name=durable,
        description=description,
        filter_subject=filter_subject,
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_deliver=-1,
        max_ack_pending=20_000,
        max_waiting=512,
    )


async def ensure_timeouts_bucket(js: Any, replicas: int = 1) -> Any:
    from nats.js.api import KeyValueConfig

    try:
        return await js.key_value(subjects.TIMEOUTS_BUCKET)
    except nats.js.errors.BucketNotFoundError:
        pass
    try:
        return await js.create_key_value(KeyValueConfig(
            bucket=subjects.TIMEOUTS_BUCKET, history=1, replicas=replicas,
            description="studroom: recent timeouts per table (timer service)"))
    except nats.js.errors.BadRequestError:
        return await js.key_value(subjects.TIMEOUTS_BUCKET)   # another instance won


async def wait_for_stream(js: Any, stream: str, stop: asyncio.Event | None, poll: float = 0.5) -> bool:
    """Wait until ``stream`` exists (the relay creates ``STUDROOM_PUBLIC``)."""
    said = False
    while stop is None or not stop.is_set():
        try:
            await js.stream_info(stream)
            return True
        except nats.js.errors.NotFoundError:
            if not said:
                log.info("waiting for stream %s (the relay creates it)", stream)
                said = True
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError, nats.errors.ConnectionClosedError):
            pass
        await asyncio.sleep(poll)
    return False


# --------------------------------------------------------------------- table client


def table_client(nc: Any, retry_for: float = 2.0) -> Any:
    """A :class:`~studroom.services.players.client.TableClient` that retries a busy or moving
    table only briefly: longer outages are the fire consumer's redelivery's job."""
    from ..players.client import TableClient

    return TableClient(nc, retry_for=retry_for)


# --------------------------------------------------------------------------- service


class TimerService:
    """One instance: both consumers' loops over one NATS connection."""

    def __init__(
        self,
        nc: Any,
        *,
        instance_id: str | None = None,
        client: Any = None,
        request_timeout: float = 2.0,
        max_inflight: int = 512,
        replicas: int = 1,
        stats: TimerStats | None = None,
        on_fire_done: Callable[[TimerPayload, str, int | None], None] | None = None,
    ) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.instance_id = instance_id or f"{socket.gethostname()}-{os.getpid()}"
        self.client = client if client is not None else table_client(nc)
        self.request_timeout = request_timeout
        self.max_inflight = max_inflight
        self.replicas = replicas
        self.stats = stats if stats is not None else TimerStats()
        self.on_fire_done = on_fire_done     # (payload, outcome, fire stamp): benchmarks
        self.kv: Any = None
        self._locks: dict[str, asyncio.Lock] = {}
        self.loops: list[PullLoop] = []

    # -- setup

    async def setup(self, stop: asyncio.Event | None = None, *, wait_public: bool = True) -> bool:
        await ensure_timer_stream(self.js, self.replicas)
        await ensure_consumer(self.js, subjects.TIMER_STREAM, fires_consumer_config())
        self.kv = await ensure_timeouts_bucket(self.js, self.replicas)
        if wait_public:
            if not await wait_for_stream(self.js, subjects.PUBLIC_STREAM, stop):
                return False
            await ensure_consumer(self.js, subjects.PUBLIC_STREAM, turns_consumer_config())
        return True

    async def run(self, stop: asyncio.Event, *, turns: bool = True, fires: bool = True) -> None:
        """Pull until ``stop`` is set (call :meth:`setup` first)."""
        if fires:
            self.loops.append(PullLoop(
                self.nc, subjects.TIMER_STREAM, FIRES_CONSUMER, self._on_fire,
                max_inflight=self.max_inflight,
                recreate=lambda: ensure_consumer(self.js, subjects.TIMER_STREAM, fires_consumer_config())))
        if turns:
            self.loops.append(PullLoop(
                self.nc, subjects.PUBLIC_STREAM, TURNS_CONSUMER, self._on_public,
                max_inflight=self.max_inflight,
                recreate=lambda: ensure_consumer(self.js, subjects.PUBLIC_STREAM, turns_consumer_config())))
        try:
            await asyncio.gather(*(loop.run(stop) for loop in self.loops))
        finally:
            for loop in self.loops:
                await loop.drain()

    def reconnected(self) -> None:
        for loop in self.loops:
            loop.reset()

    # -- public events

    async def _on_public(self, msg: Any) -> None:
        kind = msg.headers.get(EVENT_HEADER) if msg.headers else None
        if kind is not None and kind not in WANTED_EVENTS:
            await msg.ack()
            return
        try:
            head = _head_decoder.decode(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.stats.error("bad_event")
            log.warning("undecodable public message on %s: skipped", msg.subject)
            await msg.ack()
            return
        if head.type not in WANTED_EVENTS:
            await msg.ack()
            return
        table_id = msg.subject.rsplit(".", 1)[1]
        lock = self._locks.get(table_id)
        if lock is None:
            lock = self._locks[table_id] = asyncio.Lock()
        try:
            async with lock:
                if head.type == "TurnStarted":
                    await self._schedule(table_id, head)
                else:
                    await self._count_timeout(table_id, head, _stamp_ms(msg))
        except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as e:
            self.stats.retried += 1
            log.info("%s %s of %s not handled (%r): redelivery", head.type, head.turn, table_id, e)
            with contextlib.suppress(Exception):
                await msg.nak(delay=_backoff(msg))
            return
        finally:
            if not lock.locked() and not lock._waiters:
                self._locks.pop(table_id, None)
        await msg.ack()

    async def _schedule(self, table_id: str, head: _Head) -> None:
        """Publish the turn's schedule unless a newer turn's is pending (compare-and-set)."""
        self.stats.turns_seen += 1
        if head.turn is None or head.deadline_ms is None:
            self.stats.error("bad_turn")
            return
        payload = _encoder.encode(TimerPayload(
            table_id=table_id, turn=head.turn, deadline_ms=head.deadline_ms, seat=head.seat,
            kind=head.kind or "act"))
        subject = subjects.timer_schedule(table_id)
        for _ in range(10):
            try:
                pending = await self.js.get_last_msg(subjects.TIMER_STREAM, subject, direct=True)
            except nats.js.errors.NotFoundError:
                pending = None
            expected = 0
            if pending is not None:
                try:
                    if _payload_decoder.decode(pending.data).turn >= head.turn:
                        self.stats.superseded += 1
                        return
                except (msgspec.DecodeError, msgspec.ValidationError):
                    pass                               # not ours: replace it
                expected = pending.seq
            try:
                await self.js.publish(subject, payload,
                                      headers=schedule_headers(table_id, head.deadline_ms, expected))
            except nats.js.errors.APIError as e:
                if e.err_code == WRONG_LAST_SEQUENCE:
                    continue                          # someone wrote meanwhile: look again
                raise
            self.stats.scheduled += 1
            return
        raise nats.errors.TimeoutError  # pragma: no cover (ten lost races: retry later)

    async def _count_timeout(self, table_id: str, head: _Head, stamp_ms: int | None) -> None:
        """Add a ``TimedOut`` to the table's entry of the ``studroom_timeouts`` bucket."""
        if head.turn is None:
            return
        when = stamp_ms if stamp_ms is not None else now_ms()
        for _ in range(20):
            try:
                entry = await self.kv.get(table_id)
                value = json.loads(entry.value or b"{}")
                revision = entry.revision
            except nats.js.errors.KeyNotFoundError:
                value, revision = {}, None
            recent = list(value.get("recent", []))
            turns = {r.get("turn") for r in recent}
            if head.turn in turns or (len(recent) >= RECENT_TIMEOUTS and head.turn < min(turns)):
                return                                   # counted before (a redelivery)
            recent.append({"turn": head.turn, "seat": head.seat, "outcome": head.outcome, "ms": when})
            recent.sort(key=lambda r: r["turn"])
            value = {
                "timeouts": int(value.get("timeouts", 0)) + 1,
                "last_ms": max(when, int(value.get("last_ms", 0))),
                "recent": recent[-RECENT_TIMEOUTS:],
            }
            data = json.dumps(value, separators=(",", ":")).encode()
            try:
                if revision is None:
                    await self.kv.create(table_id, data)
                else:
                    await self.kv.update(table_id, data, last=revision)
            except (nats.js.errors.KeyWrongLastSequenceError, nats.js.errors.BadRequestError):
                continue                                 # another instance wrote: again
            self.stats.timeouts_counted += 1
            return

    # -- fired timers

    async def _on_fire(self, msg: Any) -> None:
        try:
            timer = _payload_decoder.decode(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.stats.error("bad_timer")
            await msg.ack()
            return
        self.stats.fired += 1
        fired_ms = _stamp_ms(msg)
        command = Timeout(turn=timer.turn, seat=timer.seat, command_id=f"timeout-{timer.turn}")
        try:
            reply = await self.client.send(timer.table_id, command, timeout=self.request_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 (no reply, no responders, disconnected)
            self.stats.retried += 1
            log.info("timeout of %s turn %d: no answer (%s): redelivery", timer.table_id, timer.turn,
                     type(e).__name__)
            with contextlib.suppress(Exception):
                await msg.nak(delay=_backoff(msg))
            return
        code = "ok" if reply.ok else (reply.error.code if reply.error else "?")
        if code in protocol.RETRYABLE:
            self.stats.retried += 1
            with contextlib.suppress(Exception):
                await msg.nak(delay=_backoff(msg))
            return
        done = now_ms()
        if code == "ok":
            self.stats.timed_out += 1
            log.debug("timed out %s turn %d seat %s", timer.table_id, timer.turn, timer.seat)
        elif code in STALE_CODES:
            self.stats.stale += 1
        elif code == "duplicate_command":
            self.stats.duplicate += 1
        else:
            self.stats.error(code)
            log.warning("timeout of %s turn %d refused: %s", timer.table_id, timer.turn,
                        reply.error.message if reply.error else code)
        if fired_ms is not None:
            self.stats.fire_lateness_ms.append(fired_ms - timer.deadline_ms)
        self.stats.done_lateness_ms.append(done - timer.deadline_ms)
        await msg.ack()
        if self.on_fire_done is not None:
            self.on_fire_done(timer, code, fired_ms)


def _backoff(msg: Any) -> float:
    try:
        delivered = msg.metadata.num_delivered or 1
    except Exception:  # noqa: BLE001
        delivered = 1
    return min(0.2 * 2 ** (delivered - 1), 5.0)


# ------------------------------------------------------------------------ entry points


async def serve_timer(
    settings: Settings,
    *,
    instance_id: str | None = None,
    stop: asyncio.Event | None = None,
    replicas: int = 1,
    stats_every: float = 30.0,
    stats: TimerStats | None = None,
) -> TimerStats:
    """Run one timer-service instance until ``stop`` is set (forever if None).

    ``settings.nats_url`` names the NATS server(s); without one an embedded server is
    started in ``settings.data_dir`` (development only: normally the room or the
    deployment runs NATS).  Returns the instance's counters.
    """
    stop = stop if stop is not None else asyncio.Event()
    stats = stats if stats is not None else TimerStats()
    embedded = None
    url = settings.nats_url
    if url is None:
        from ..runtime.embedded import EmbeddedNats

        embedded = EmbeddedNats(settings.data_dir)
        await asyncio.to_thread(embedded.start)
        url = embedded.url
    service: TimerService | None = None

    async def reconnected() -> None:
        log.info("reconnected to NATS")
        if service is not None:
            service.reconnected()

    async def disconnected() -> None:
        log.info("disconnected from NATS")

    async def error(e: Exception) -> None:
        log.debug("NATS: %r", e)

    name = f"studroom-timer-{instance_id or os.getpid()}"
    try:
        nc = await nats.connect(url.split(","), name=name, max_reconnect_attempts=-1,
                                reconnect_time_wait=0.25, reconnected_cb=reconnected,
                                disconnected_cb=disconnected, error_cb=error)
        try:
            service = TimerService(nc, instance_id=instance_id, replicas=replicas, stats=stats)
            log.info("timer service %s: NATS %s", service.instance_id, nc.connected_url.netloc
                     if nc.connected_url else url)
            while not stop.is_set():
                try:
                    if await service.setup(stop):
                        break
                except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as e:
                    log.info("setup failed (%r): trying again", e)
                    await asyncio.sleep(0.5)
            if stop.is_set():
                return stats
            reporter = asyncio.create_task(_report(stats, stop, stats_every))
            try:
                await service.run(stop)
            finally:
                reporter.cancel()
            log.info("timer service %s stops: %s", service.instance_id, stats.line())
        finally:
            with contextlib.suppress(Exception):
                await nc.drain()
    finally:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
    return stats


async def _report(stats: TimerStats, stop: asyncio.Event, every: float) -> None:
    if every <= 0:
        return
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        log.info("%s", stats.line())
