"""This instance's wheel at work: it times each turn out at its deadline, and tells
the other instances which turns it holds.

A turn this instance scheduled is set in its wheel (``wheel.py``) and fired here at
the deadline, sooner than the JetStream schedule, which stays the durable backstop:
when the schedule fires, the backstop asks :meth:`LocalWheel.answered` whether the
wheel got the table's final answer already.  One loop timer sleeps until the soonest
deadline.  Another instance that schedules a table's next turn says so on the turn
notices (``subjects.turn_notice``): this wheel drops its older timer of that table.
docs/design/timer.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec
import nats.errors

from ..wire import subjects
from .schedule import TimerPayload
from .stats import TimerStats
from .timeouts import is_final
from .wheel import Wheel

log = logging.getLogger("studroom.timer")

LOCAL_ANSWERS: Final = 100_000               # the wheel's answers kept for the backstop (LRU)

Source = str          # which path fired a timer: "wheel" (local) or "schedule" (the backstop)
FireDone = Callable[[TimerPayload, str, int | None, Source], None]


class Notice(msgspec.Struct, frozen=True, omit_defaults=True):
    """A turn set in one instance's wheel, for the others; ``seq``: its schedule's
    sequence (0: not said, an older instance's notice), so the others know the
    table's schedule subject without reading it."""

    instance: str
    turn: int
    seq: int = 0


_notice_decoder = msgspec.json.Decoder(Notice)
_encode = msgspec.json.Encoder().encode


class LocalWheel:
    """``time_out`` sends a turn's Timeout (the table's code, None if no answer);
    ``done`` hears of each final answer (with the ms the timer fired, and "wheel")."""

    def __init__(self, nc: Any, instance_id: str, stats: TimerStats, *,
                 time_out: Callable[[TimerPayload], Awaitable[str | None]], done: FireDone,
                 clock: Callable[[], float]) -> None:
        self.nc = nc
        self.instance_id = instance_id
        self.stats = stats
        self.time_out = time_out
        self.done = done
        self.clock = clock                   # wall clock, seconds since the epoch
        self.wheel = Wheel()
        self._running = False
        self._wake_handle: asyncio.TimerHandle | None = None
        self._wake_at: int | None = None                 # the deadline the loop timer is set for
        self._firing: set[asyncio.Task[None]] = set()
        # table -> (turn, the wheel's final answer or None: left to the backstop)
        self._answers: OrderedDict[str, tuple[int, asyncio.Future[str | None]]] = OrderedDict()

    def arm(self, timer: TimerPayload) -> bool:
        """Set ``timer``, unless its deadline has passed already (the schedule, due at
        once, fires it) or the table's timer here is of a newer turn."""
        if timer.deadline_ms <= self.clock() * 1000 or not self.wheel.set(timer):
            return False
        if self._running and (self._wake_at is None or timer.deadline_ms < self._wake_at):
            self.wake_up()
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Fire the timers at their deadlines until ``stop``; then wait for the timeouts
        under way (the pending timers are the schedules' job)."""
        self._running = True
        self.wake_up()
        try:
            await stop.wait()
        finally:
            self._running = False
            if self._wake_handle is not None:
                self._wake_handle.cancel()
            self._wake_handle, self._wake_at = None, None
            if self._firing:
                await asyncio.gather(*self._firing, return_exceptions=True)

    def wake_up(self) -> None:
        """Send what is due, then sleep until the soonest deadline (one loop timer)."""
        if self._wake_handle is not None:
            self._wake_handle.cancel()
        self._wake_handle, self._wake_at = None, None
        for timer in self.wheel.due(int(self.clock() * 1000)):
            task = asyncio.create_task(self.fire(timer))
            self._firing.add(task)
            task.add_done_callback(self._firing.discard)
        deadline = self.wheel.next_deadline()
        if deadline is not None:
            loop = asyncio.get_running_loop()
            self._wake_at = deadline
            self._wake_handle = loop.call_at(loop.time() + max(deadline / 1000 - self.clock(), 0.0), self.wake_up)

    async def fire(self, timer: TimerPayload) -> None:
        """Time the turn out now; without a final answer it is left to the backstop."""
        self.stats.local_fired += 1
        fired = self.clock() * 1000
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._answers[timer.table_id] = (timer.turn, answer)     # the backstop waits for it
        self._answers.move_to_end(timer.table_id)
        while len(self._answers) > LOCAL_ANSWERS:
            self._answers.popitem(last=False)
        code: str | None = None
        try:
            code = await self.time_out(timer)
            if is_final(code):
                self.done(timer, code, int(fired), "wheel")
            else:
                self.stats.local_failed += 1
                code = None
        finally:
            answer.set_result(code)

    async def answered(self, timer: TimerPayload) -> bool:
        """Did the wheel get the table's final answer for this turn or a later one
        (waiting for it if it is under way)?"""
        local = self._answers.get(timer.table_id)
        if local is None or local[0] < timer.turn:
            return False
        return await asyncio.shield(local[1]) is not None

    async def tell_others(self, table_id: str, turn: int, seq: int = 0) -> None:
        """Tell the other instances the table's turn ``turn`` is set here."""
        self.stats.notices += 1
        try:
            await self.nc.publish(subjects.turn_notice(table_id), _encode(Notice(self.instance_id, turn, seq)))
        except nats.errors.Error:
            log.debug("turn notice of %s not sent (the other wheels' timer of it may fire: stale)", table_id)

    def disarm_older(self, table_id: str, turn: int) -> bool:
        """Drop the table's timer if it is of a turn before ``turn`` (a newer turn of
        the table is set, here or elsewhere); was one dropped?"""
        return self.wheel.drop_older(table_id, turn)

    async def on_notice(self, msg: Any) -> tuple[str, Notice] | None:
        """Another instance set a table's newer turn: our older timer of it is over.
        The table and the notice (None: not one)."""
        try:
            notice = _notice_decoder.decode(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        table_id = msg.subject.rsplit(".", 1)[1]
        if notice.instance != self.instance_id and self.disarm_older(table_id, notice.turn):
            self.stats.local_dropped += 1
        return table_id, notice
