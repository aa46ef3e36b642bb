"""The timer service: every turn ends, on time, exactly once (rules R5, R18, R19, R20).

    studroom serve timer [--instance-id ID]

A NATS client with the credentials of the service "timer".  It reads the relay's
public messages that hold a turn: a message's last ``TurnStarted`` (or
``PauseStarted``, the pause before a hand) becomes ONE JetStream message schedule for
its table (the next turn's replaces it: ``turns.py``), the durable backstop, written
only if the turn lasts a second (``settling.py``), and a timer in this instance's
local wheel (``local_wheel.py``), which sends
``Timeout(turn, seat)`` to the table as the service "timer" at the deadline
(``timeouts.py``; no clock in it: the table dates it).  When a schedule fires, the
service sends the Timeout unless its own wheel already had the table's answer, and acks
after the reply; a busy or unreachable table gets the message again later.  The
design, the guarantees and the lateness: docs/design/timer.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any, Final

import msgspec
import nats.errors
import nats.js.errors

from ..wire import raw, subjects
from ..wire.declared import wait_for_stream
from ..wire.event_messages import is_wanted
from ..wire.pull import PullLoop, retry_later, stamp_ms
from .last_schedules import LastSchedules
from .local_wheel import FireDone, LocalWheel, Source
from .publisher import SchedulePublisher
from .schedule import TimerPayload, decode_payload
from .settling import Settling
from .stats import TimerStats
from .streams import (
    FIRES_CONSUMER,
    TURNS_CONSUMER,
    ensure_consumer,
    ensure_timer_stream,
    fires_consumer_config,
    turns_consumer_config,
)
from .timeouts import Timeouts, is_final, table_client
from .turns import INTEREST, publish_schedule, timer_of, turns_of

log = logging.getLogger("studroom.timer")

# What the counters call the messages it cannot use (they are acked and dropped).
BAD_EVENT: Final = "bad_event"               # a public message that is no event
BAD_TURN: Final = "bad_turn"                 # a TurnStarted without turn or deadline
BAD_TIMER: Final = "bad_timer"               # a fired message that is no TimerPayload


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
        self.max_inflight = max_inflight
        self.replicas = replicas
        self.stats = stats if stats is not None else TimerStats()
        self.on_fire_done = on_fire_done     # (payload, outcome, fire ms, source): benchmarks
        self.clock = clock                   # wall clock, seconds since the epoch
        self.timeouts = Timeouts(client if client is not None else table_client(nc), self.stats, request_timeout)
        self.local = LocalWheel(nc, self.instance_id, self.stats, time_out=self.timeouts.send, done=self._finish,
                                clock=clock)
        self.publisher = SchedulePublisher(nc, self.js)  # the schedules, acks on a subscription of its own
        self.last = LastSchedules()                      # each table's schedule subject, as last known
        self._locks: dict[str, asyncio.Lock] = {}       # per table: one turn scheduled at a time
        self.settling = Settling(self._write, self._ack, self.stats)   # turns held before their schedule
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
        notices = await self.nc.subscribe(subjects.all_turn_notices(), cb=self._on_notice) if turns else None
        if turns:
            await self.publisher.start()
        wheel = asyncio.create_task(self.local.run(stop))
        settling = asyncio.create_task(self.settling.run(stop))
        try:
            await asyncio.gather(*(loop.run(stop) for loop in self.loops))
        finally:
            for loop in self.loops:
                await loop.drain()
            await settling              # the turns still held: their schedules written
            await wheel
            if notices is not None:
                with contextlib.suppress(nats.errors.Error):
                    await notices.unsubscribe()
            await self.publisher.stop()

    def reconnected(self) -> None:
        """After a reconnect: the open pull requests are lost, ask again."""
        for loop in self.loops:
            loop.reset()

    # -- public events: the turns

    async def _on_public(self, msg: Any) -> None:
        if not is_wanted(msg.subject, INTEREST):        # a consumer the server kept unfiltered
            await self._ack(msg)
            return
        try:
            turns = turns_of(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.stats.error(BAD_EVENT)
            log.warning("undecodable public message on %s: skipped", msg.subject)
            await self._ack(msg)
            return
        if not turns:
            await self._ack(msg)
            return
        self.stats.turns_seen += len(turns)
        self.stats.superseded += len(turns) - 1         # the message's later turn ended them
        head = turns[-1]
        timer = timer_of(subjects.table_of_public(msg.subject), head)
        if timer is None:
            self.stats.error(BAD_TURN)
            await self._ack(msg)
            return
        if self.settling.wants(timer, self.clock() * 1000):
            self.local.arm(timer)                       # on time from now; durable if it lasts
            last = self.last.get(timer.table_id)
            if not await self.settling.hold(timer, msg) and (last is None or not last.ours):
                await self.local.tell_others(timer.table_id, timer.turn)    # their older turn is over
            return
        await self._write(timer, msg)

    async def _write(self, timer: TimerPayload, msg: Any) -> None:
        """The turn's schedule stored (or found superseded), then its message acknowledged;
        on a NATS failure the message comes again."""
        lock = self._locks.setdefault(timer.table_id, asyncio.Lock())
        try:
            async with lock:
                await self._schedule(timer)
        except (TimeoutError, nats.errors.Error, nats.js.errors.Error) as e:
            log.info("turn %s of %s not handled (%r): redelivery", timer.turn, timer.table_id, e)
            await self._retry_later(msg)
            return
        finally:
            if not lock.locked() and not lock._waiters:
                self._locks.pop(timer.table_id, None)
        await self._ack(msg)

    async def _schedule(self, timer: TimerPayload) -> None:
        """The turn's schedule (durable) first, then the local wheel (precise)."""
        try:
            published = await publish_schedule(self.js, self.publisher, timer, self.last)
        finally:
            self.stats.schedule_reads = self.last.reads
        if published is None:
            self.stats.superseded += 1
            self.local.disarm_older(timer.table_id, timer.turn + 1)   # armed while it was held
            return
        self.stats.scheduled += 1
        self.local.arm(timer)
        if published.tell:
            await self.local.tell_others(timer.table_id, timer.turn, published.seq)

    async def _on_notice(self, msg: Any) -> None:
        """Another instance set a table's turn: drop our older timer of it, and know
        its schedule (the next publish needs no read)."""
        heard = await self.local.on_notice(msg)
        if heard is not None and heard[1].instance != self.instance_id:
            self.last.heard(heard[0], heard[1].turn, heard[1].seq)
            await self.settling.end_older(heard[0], heard[1].turn)

    # -- fired schedules: the backstop

    async def _on_fire(self, msg: Any) -> None:
        try:
            timer = decode_payload(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.stats.error(BAD_TIMER)
            await self._ack(msg)
            return
        self.stats.fired += 1
        fired_ms = stamp_ms(msg)
        if fired_ms is not None:
            self.stats.fire_lateness_ms.append(fired_ms - timer.deadline_ms)
        if await self.local.answered(timer):
            self.stats.backstop_skipped += 1
            await self._ack(msg)
            return
        code = await self.timeouts.send(timer)
        if not is_final(code):
            await self._retry_later(msg)
            return
        self._finish(timer, code, fired_ms, "schedule")
        await self._ack(msg)

    async def _ack(self, msg: Any) -> None:
        """As ``msg.ack()`` does, written straight to the connection (``wire/raw.py``)."""
        await raw.ack(self.nc, (msg,))

    async def _retry_later(self, msg: Any) -> None:
        self.stats.retried += 1
        await retry_later(msg)

    def _finish(self, timer: TimerPayload, code: str, fired_ms: int | None, source: Source) -> None:
        """A final answer, from either path."""
        self.stats.done_lateness_ms.append(self.clock() * 1000 - timer.deadline_ms)
        if self.on_fire_done is not None:
            self.on_fire_done(timer, code, fired_ms, source)
