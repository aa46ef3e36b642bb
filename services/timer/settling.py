"""Turns that end before their schedule could matter: held a moment, never written.

A turn's durable schedule (``turns.py``) is the backstop for a timer service that dies.
Most turns end within milliseconds (a player acts, the next turn starts), seconds
before their deadline, and writing a schedule for each (a compare-and-set publish, its
ack, the server storing and replacing it) cost the timer service and NATS about 8 % of
the room's CPU per action (``bench room``, 2026-12-04).  So a turn due later than
:data:`HOLD_IF_DUE_AFTER` is set in the local wheel at once and its message held,
unacknowledged, for :data:`SETTLE`: the table's next turn arriving meanwhile ends it
(its message is acknowledged, nothing written); a turn still running after
:data:`SETTLE` gets its schedule then, as any turn did before.

The guarantee holds: a turn's message is acknowledged only once the turn is over or
its schedule is stored.  A timer service killed while it holds a turn leaves the
message unacknowledged: it comes again after the consumer's ``ack_wait`` to another
instance (or this one, restarted), still before the deadline, which is further off
than ``ack_wait`` + :data:`SETTLE` + a second.  docs/design/timer.md, "Settling".
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, NamedTuple

from ..runtime.waiting import first_set
from .schedule import TimerPayload
from .stats import TimerStats
from .streams import TURNS_ACK_WAIT

SETTLE: Final = 1.0                          # seconds a turn is held before its schedule is written
HOLD_IF_DUE_AFTER: Final = TURNS_ACK_WAIT + SETTLE + 1.0   # seconds: only turns due later are held
MAX_HELD: Final = 4096                       # turns held at once at most (each an unacknowledged message)


class Held(NamedTuple):
    timer: TimerPayload
    msg: Any
    since: float                             # monotonic


class Settling:
    """The turns held, one per table.  ``write(timer, msg)`` stores a turn's schedule and
    acknowledges its message (or asks for it again); ``ack(msg)`` acknowledges one."""

    def __init__(self, write: Callable[[TimerPayload, Any], Awaitable[None]],
                 ack: Callable[[Any], Awaitable[None]], stats: TimerStats, *,
                 settle: float = SETTLE, max_held: int = MAX_HELD) -> None:
        self.write = write
        self.ack = ack
        self.stats = stats
        self.settle = settle
        self.max_held = max_held
        self._held: dict[str, Held] = {}
        self._holding = asyncio.Event()      # set when a turn is held: an idle run() sleeps until then

    def __len__(self) -> int:
        return len(self._held)

    def wants(self, timer: TimerPayload, now_ms: float) -> bool:
        """Whether ``timer``'s schedule may wait: its deadline is far enough off, and
        there is room (else it is written at once)."""
        return timer.deadline_ms - now_ms > HOLD_IF_DUE_AFTER * 1000 and (
            timer.table_id in self._held or len(self._held) < self.max_held)

    async def hold(self, timer: TimerPayload, msg: Any) -> bool:
        """Hold the table's turn ``timer`` (its message ``msg``); the turn held before it
        is over: its message is acknowledged, its schedule never written.  Whether a
        turn of the table was held here (else another instance may hold an older one)."""
        held = self._held.get(timer.table_id)
        if held is not None and held.timer.turn > timer.turn:
            self.stats.settled += 1               # an older turn, delivered late: over already
            await self.ack(msg)
            return True
        self._held[timer.table_id] = Held(timer, msg, time.monotonic())
        self._holding.set()
        if held is not None and held.timer.turn < timer.turn:
            self.stats.settled += 1
            await self.ack(held.msg)
        # (the same turn again, a redelivery: held with its newer delivery, nothing acked)
        return held is not None

    async def end_older(self, table_id: str, turn: int) -> None:
        """Another instance holds the table's ``turn``: an older turn held here is over."""
        held = self._held.get(table_id)
        if held is not None and held.timer.turn < turn:
            del self._held[table_id]
            self.stats.settled += 1
            await self.ack(held.msg)

    async def run(self, stop: asyncio.Event) -> None:
        """Write the schedules of the turns held for :data:`SETTLE` until ``stop``; then
        those of every turn still held (what cannot be written comes again)."""
        try:
            while not stop.is_set():
                if not self._held:                # nothing to write: no wake-ups until a turn is held
                    self._holding.clear()
                    await first_set(stop, self._holding)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.settle / 4)
                await self._write_held(time.monotonic() - self.settle)
        finally:
            await self._write_held(float("inf"))

    async def _write_held(self, before: float) -> None:
        """Write the schedules of the turns held since ``before`` (monotonic) or longer."""
        due = [held for held in self._held.values() if held.since <= before]
        for held in due:
            if self._held.get(held.timer.table_id) is held:
                del self._held[held.timer.table_id]
                await self.write(held.timer, held.msg)
