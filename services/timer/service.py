"""The timer service: every turn ends, on time, exactly once (rules R5, R18, R19, R20).

    studroom serve timer [--instance-id ID]

A NATS client with the credentials of the service "timer".  It reads the relay's
public events: each ``TurnStarted`` (and ``PauseStarted``, the pause before a hand)
becomes ONE JetStream message schedule for its table (the next turn's replaces it),
the durable backstop, and a timer in this instance's local wheel (``wheel.py``),
which sends ``Timeout(turn, seat)`` to the table as the service "timer" at the
deadline (no clock in it: the table dates it).  When a schedule fires, the service
sends the Timeout unless its own wheel already had the table's answer, and acks after
the reply; a busy or unreachable table gets the message again later.  The design, the
guarantees and the lateness: docs/design/timer.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import nats.errors
import nats.js.errors
from studroom.domain.commands import Timeout
from studroom.domain.errors import DUPLICATE_COMMAND, NO_HAND, STALE_TIMEOUT
from ..wire import protocol, subjects
from ..wire.pull import PullLoop, retry_later, stamp_ms
from .schedule import TimerPayload, decode_payload, encode_payload, schedule_headers
from .wheel import Wheel
from .streams import (
    FIRES_CONSUMER,
    TURNS_CONSUMER,
    ensure_consumer,
    ensure_timer_stream,
    fires_consumer_config,
    turns_consumer_config,
)
from ..wire.declared import wait_for_stream

log = logging.getLogger("studroom.timer")

EVENT_HEADER: Final = "Studroom-Event"       # the relay names each public event's type
# The public events that start a timer, and the kind of a timer without one of its own.
WANTED_EVENTS: Final = {"TurnStarted": "act", "PauseStarted": "pause"}
SENDER: Final = "timer"                      # the service identity timeouts come from
OK: Final = "ok"                             # the outcome of a Timeout the table carried out
# The turn this timer was set for is over (answered, or its hand ended): drop the timer.
STALE_CODES: Final = frozenset({STALE_TIMEOUT, NO_HAND})
WRONG_LAST_SEQUENCE: Final = 10071           # JetStream API error code
PUBLISH_ATTEMPTS: Final = 10                 # compare-and-set rounds before a redelivery
LOCAL_ANSWERS: Final = 100_000               # the wheel's answers kept for the backstop (LRU)
# Core NATS, to every instance: "table T's turn N is set here" (the others drop their
# older timer of T from their wheels: that turn is over).
TURN_NOTICES: Final = f"{subjects.PREFIX}.timer.turn"
# What the counters call the messages it cannot use (they are acked and dropped).
BAD_EVENT: Final = "bad_event"               # a public message that is no event
BAD_TURN: Final = "bad_turn"                 # a TurnStarted without turn or deadline
BAD_TIMER: Final = "bad_timer"               # a fired message that is no TimerPayload


class _Head(msgspec.Struct, frozen=True):
    """The few fields of a public event this service reads (others are ignored)."""

    type: str
    turn: int | None = None
    seat: int | None = None
    kind: str | None = None
    deadline_ms: int | None = None


_head_decoder = msgspec.json.Decoder(_Head)
_encode = msgspec.json.Encoder().encode


class _Notice(msgspec.Struct, frozen=True):
    """A turn set in one instance's wheel, for the others."""

    instance: str
    turn: int


_notice_decoder = msgspec.json.Decoder(_Notice)


@dataclass
class TimerStats:
    """What one instance did (logged every ``stats_every`` seconds and at the end)."""

    turns_seen: int = 0          # TurnStarted / PauseStarted events read
    scheduled: int = 0           # schedules published (and set in the local wheel)
    superseded: int = 0          # a turn older than the pending schedule: skipped
    fired: int = 0               # fired schedules (the backstop) received
    local_fired: int = 0         # local wheel timers sent at their deadline
    local_dropped: int = 0       # ... dropped before: another instance set a newer turn
    local_failed: int = 0        # ... without a final answer: left to the backstop
    backstop_skipped: int = 0    # fired schedules this instance's wheel had answered already
    timed_out: int = 0           # Timeout accepted by the table
    stale: int = 0               # stale_timeout: the player acted in time (R20)
    duplicate: int = 0           # duplicate_command: another instance's id was higher (retried)
    retried: int = 0             # nak'ed for redelivery (no reply, conflict, ...)
    errors: dict[str, int] = field(default_factory=dict)
    # lateness, ms: the fire (server's stamp of a schedule, or the wheel's) - deadline;
    # the table's reply received - deadline (a final answer, from either path)
    fire_lateness_ms: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))
    done_lateness_ms: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))

    def error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1

    def line(self) -> str:
        errors = ", ".join(f"{k}={v}" for k, v in sorted(self.errors.items())) or "none"
        return (f"turns={self.turns_seen} scheduled={self.scheduled} superseded={self.superseded} "
                f"local: fired={self.local_fired} dropped={self.local_dropped} failed={self.local_failed} "
                f"backstop: fired={self.fired} skipped={self.backstop_skipped} "
                f"timed_out={self.timed_out} stale={self.stale} "
                f"duplicate={self.duplicate} retried={self.retried} errors: {errors}")


def table_client(nc: Any, retry_for: float = 2.0) -> Any:
    """A :class:`~studroom.services.client.table.TableClient` of the service "timer"
    (its commands carry the client's sequence ids) that retries a busy or moving table
    only briefly: longer outages are the fire consumer's redelivery's job."""
    from ..client.table import TableClient

    return TableClient(nc, "service", SENDER, retry_for=retry_for)


Source = str          # which path fired a timer: "wheel" (local) or "schedule" (the backstop)
FireDone = Callable[[TimerPayload, str, int | None, Source], None]


class TimerService:
    """One instance: both consumers' loops and the local wheel over one NATS connection."""

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
        on_fire_done: FireDone | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.instance_id = instance_id or f"{socket.gethostname()}-{os.getpid()}"
        self.client = client if client is not None else table_client(nc)
        self.request_timeout = request_timeout
        self.max_inflight = max_inflight
        self.replicas = replicas
        self.stats = stats if stats is not None else TimerStats()
        self.on_fire_done = on_fire_done     # (payload, outcome, fire ms, source): benchmarks
        self.clock = clock                   # wall clock, seconds since the epoch
        self.wheel = Wheel()
        self._wheel_running = False
        self._wake_handle: asyncio.TimerHandle | None = None
        self._wake_at: int | None = None                 # the deadline the loop timer is set for
        self._firing: set[asyncio.Task[None]] = set()
        # table -> (turn, the wheel's final answer or None: left to the backstop)
        self._answers: OrderedDict[str, tuple[int, asyncio.Future[str | None]]] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self.loops: list[PullLoop] = []

    # -- setup

    async def setup(self, stop: asyncio.Event | None = None, *, wait_public: bool = True) -> bool:
        """Declare the stream and the consumers; False if ``stop`` came while waiting
        for the relay's public stream."""
        await ensure_timer_stream(self.js, self.replicas)
        await ensure_consumer(self.js, subjects.TIMER_STREAM, fires_consumer_config())
        if wait_public:
            if not await wait_for_stream(self.js, subjects.PUBLIC_STREAM, stop):
                return False
            await ensure_consumer(self.js, subjects.PUBLIC_STREAM, turns_consumer_config())
        return True

    async def run(self, stop: asyncio.Event, *, turns: bool = True, fires: bool = True) -> None:
        """Pull (and run the wheel) until ``stop`` is set (call :meth:`setup` first)."""
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
        notices = await self.nc.subscribe(f"{TURN_NOTICES}.*", cb=self._on_notice) if turns else None
        wheel = asyncio.create_task(self.run_wheel(stop))
        try:
            await asyncio.gather(*(loop.run(stop) for loop in self.loops))
        finally:
            for loop in self.loops:
                await loop.drain()
            await wheel
            if notices is not None:
                with contextlib.suppress(nats.errors.Error):
                    await notices.unsubscribe()

    def reconnected(self) -> None:
        """After a reconnect: the open pull requests are lost, ask again."""
        for loop in self.loops:
            loop.reset()

    # -- the local wheel

    def arm(self, timer: TimerPayload) -> bool:
        """Set ``timer`` in the local wheel, unless its deadline has passed already (the
        schedule, due at once, fires it) or the table's wheel timer is newer."""
        if timer.deadline_ms <= self.clock() * 1000 or not self.wheel.set(timer):
            return False
        if self._wheel_running and (self._wake_at is None or timer.deadline_ms < self._wake_at):
            self._wake_up()
        return True

    async def run_wheel(self, stop: asyncio.Event) -> None:
        """Fire the wheel's timers at their deadlines until ``stop``; then wait for
        the timeouts under way (the wheel's pending timers are the schedules' job)."""
        self._wheel_running = True
        self._wake_up()
        try:
            await stop.wait()
        finally:
            self._wheel_running = False
            if self._wake_handle is not None:
                self._wake_handle.cancel()
            self._wake_handle, self._wake_at = None, None
            if self._firing:
                await asyncio.gather(*self._firing, return_exceptions=True)

    def _wake_up(self) -> None:
        """Send what is due, then sleep until the soonest deadline (one loop timer)."""
        if self._wake_handle is not None:
            self._wake_handle.cancel()
        self._wake_handle, self._wake_at = None, None
        for timer in self.wheel.due(int(self.clock() * 1000)):
            task = asyncio.create_task(self._fire_local(timer))
            self._firing.add(task)
            task.add_done_callback(self._firing.discard)
        deadline = self.wheel.next_deadline()
        if deadline is not None:
            loop = asyncio.get_running_loop()
            self._wake_at = deadline
            self._wake_handle = loop.call_at(loop.time() + max(deadline / 1000 - self.clock(), 0.0), self._wake_up)

    async def _fire_local(self, timer: TimerPayload) -> None:
        """Time the turn out now; a failure leaves it to the schedule (the backstop)."""
        self.stats.local_fired += 1
        fired = self.clock() * 1000
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._answers[timer.table_id] = (timer.turn, answer)     # the backstop waits for it
        self._answers.move_to_end(timer.table_id)
        while len(self._answers) > LOCAL_ANSWERS:
            self._answers.popitem(last=False)
        code: str | None = None
        try:
            code = await self._send_timeout(timer)
            if code is None or code in protocol.RETRYABLE or code == DUPLICATE_COMMAND:
                self.stats.local_failed += 1
                code = None
            else:
                self._finish(timer, code, int(fired), "wheel")
        finally:
            answer.set_result(code)

    async def _tell_others(self, table_id: str, turn: int) -> None:
        """Tell the other instances the table's turn ``turn`` is set here."""
        try:
            await self.nc.publish(f"{TURN_NOTICES}.{table_id}", _encode(_Notice(self.instance_id, turn)))
        except nats.errors.Error:
            log.debug("turn notice of %s not sent (the other wheels' timer of it may fire: stale)", table_id)

    async def _on_notice(self, msg: Any) -> None:
        """Another instance set a table's newer turn: our older timer of it is over."""
        try:
            notice = _notice_decoder.decode(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        if notice.instance != self.instance_id and self.wheel.drop_older(msg.subject.rsplit(".", 1)[1], notice.turn):
            self.stats.local_dropped += 1

    # -- public events

    async def _on_public(self, msg: Any) -> None:
        kind = msg.headers.get(EVENT_HEADER) if msg.headers else None
        if kind is not None and kind not in WANTED_EVENTS:
            await msg.ack()
            return
        try:
            head = _head_decoder.decode(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.stats.error(BAD_EVENT)
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
                await self._schedule(table_id, head)
        except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as e:
            log.info("%s %s of %s not handled (%r): redelivery", head.type, head.turn, table_id, e)
            await self._retry_later(msg)
            return
        finally:
            if not lock.locked() and not lock._waiters:
                self._locks.pop(table_id, None)
        await msg.ack()

    async def _schedule(self, table_id: str, head: _Head) -> None:
        """Publish the turn's schedule unless a newer turn's is pending (compare-and-set),
        then set it in the local wheel."""
        self.stats.turns_seen += 1
        if head.turn is None or head.deadline_ms is None:
            self.stats.error(BAD_TURN)
            return
        timer = TimerPayload(table_id=table_id, turn=head.turn, deadline_ms=head.deadline_ms, seat=head.seat,
                             kind=head.kind or WANTED_EVENTS[head.type])
        payload = encode_payload(timer)
        subject = subjects.timer_schedule(table_id)
        for _ in range(PUBLISH_ATTEMPTS):
            try:
                pending = await self.js.get_last_msg(subjects.TIMER_STREAM, subject, direct=True)
            except nats.js.errors.NotFoundError:
                pending = None
            expected = 0
            if pending is not None:
                try:
                    if decode_payload(pending.data).turn >= head.turn:
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
            self.arm(timer)                           # durable first, then precise
            await self._tell_others(table_id, head.turn)
            return
        raise nats.errors.TimeoutError  # pragma: no cover (ten lost races: retry later)

    # -- fired schedules (the backstop)

    async def _on_fire(self, msg: Any) -> None:
        try:
            timer = decode_payload(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.stats.error(BAD_TIMER)
            await msg.ack()
            return
        self.stats.fired += 1
        fired_ms = stamp_ms(msg)
        if fired_ms is not None:
            self.stats.fire_lateness_ms.append(fired_ms - timer.deadline_ms)
        if await self._answered_locally(timer):
            self.stats.backstop_skipped += 1
            await msg.ack()
            return
        code = await self._send_timeout(timer)
        if code is None or code in protocol.RETRYABLE or code == DUPLICATE_COMMAND:
            await self._retry_later(msg)
            return
        self._finish(timer, code, fired_ms, "schedule")
        await msg.ack()

    async def _answered_locally(self, timer: TimerPayload) -> bool:
        """Did this instance's wheel get the table's final answer for this turn or a
        later one (waiting for it if it is under way)?"""
        local = self._answers.get(timer.table_id)
        if local is None or local[0] < timer.turn:
            return False
        return await asyncio.shield(local[1]) is not None

    # -- the table's answer

    async def _send_timeout(self, timer: TimerPayload) -> str | None:
        """Send the turn's Timeout; the table's code (``ok`` or an error), None if no answer."""
        command = Timeout(turn=timer.turn, seat=timer.seat)     # the client numbers it; the table dates it
        try:
            reply = await self.client.send(timer.table_id, command, timeout=self.request_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 (no reply, no responders, disconnected)
            log.info("timeout of %s turn %d: no answer (%s)", timer.table_id, timer.turn, type(e).__name__)
            return None
        code = OK if reply.ok else (reply.error.code if reply.error else "?")
        if code == DUPLICATE_COMMAND:
            # Not carried out: another instance, its clock ahead of ours, numbered a
            # timeout of this table higher. The redelivery gets a later id.
            self.stats.duplicate += 1
            log.warning("timeout of %s turn %d refused as a duplicate (a timer instance's clock is "
                        "ahead of this one's): again later", timer.table_id, timer.turn)
        elif code not in protocol.RETRYABLE:
            self._count_outcome(timer, code, reply)
        return code

    def _finish(self, timer: TimerPayload, code: str, fired_ms: int | None, source: Source) -> None:
        self.stats.done_lateness_ms.append(self.clock() * 1000 - timer.deadline_ms)
        if self.on_fire_done is not None:
            self.on_fire_done(timer, code, fired_ms, source)

    def _count_outcome(self, timer: TimerPayload, code: str, reply: protocol.Reply) -> None:
        """Count the table's final answer to a timeout."""
        if code == OK:
            self.stats.timed_out += 1
            log.debug("timed out %s turn %d seat %s", timer.table_id, timer.turn, timer.seat)
        elif code in STALE_CODES:
            self.stats.stale += 1
        else:
            self.stats.error(code)
            log.warning("timeout of %s turn %d refused: %s", timer.table_id, timer.turn,
                        reply.error.message if reply.error else code)

    async def _retry_later(self, msg: Any) -> None:
        self.stats.retried += 1
        await retry_later(msg)
