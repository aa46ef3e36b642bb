"""The local timer wheel: the turns this instance learned, by deadline (a heap).

Pure: the caller hands in the time.  One timer per table, the newest turn's; an older
turn never replaces a newer one, a replaced timer never comes due.  The service fires
what comes due itself, at the deadline; the JetStream schedule stays the durable
backstop (docs/design/timer.md).
"""

from __future__ import annotations

import heapq
import itertools

from .schedule import TimerPayload


class Wheel:
    """The pending timers, one per table, soonest deadline first."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerPayload]] = []    # (deadline, order, timer)
        self._pending: dict[str, TimerPayload] = {}             # table -> its live timer
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._pending)

    def set(self, timer: TimerPayload) -> bool:
        """Set the table's timer (replacing an older turn's); False if the table's
        pending timer is of this turn or a newer one."""
        pending = self._pending.get(timer.table_id)
        if pending is not None and pending.turn >= timer.turn:
            return False
        self._pending[timer.table_id] = timer
        heapq.heappush(self._heap, (timer.deadline_ms, next(self._order), timer))
        return True

    def drop_older(self, table_id: str, turn: int) -> bool:
        """Drop the table's timer if it is of a turn before ``turn``; was one dropped?"""
        pending = self._pending.get(table_id)
        if pending is None or pending.turn >= turn:
            return False
        del self._pending[table_id]
        return True

    def next_deadline(self) -> int | None:
        """The soonest live deadline (ms since the epoch), None if nothing is pending."""
        self._drop_replaced()
        return self._heap[0][0] if self._heap else None

    def due(self, now_ms: int) -> list[TimerPayload]:
        """Remove and return the timers whose deadline is ``now_ms`` or earlier."""
        fired: list[TimerPayload] = []
        while self._heap and self._heap[0][0] <= now_ms:
            _, _, timer = heapq.heappop(self._heap)
            if self._pending.get(timer.table_id) is timer:
                del self._pending[timer.table_id]
                fired.append(timer)
        return fired

    def _drop_replaced(self) -> None:
        while self._heap and self._pending.get(self._heap[0][2].table_id) is not self._heap[0][2]:
            heapq.heappop(self._heap)
