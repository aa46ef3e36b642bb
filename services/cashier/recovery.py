"""Finishing the buy-ins left open (docs/design/cashier.md, "Crashes").

Every instance follows its store's notification log from the start: the desks' events
say which tables have a buy-in open, whose it is and when it was last claimed.  Every
second it sends again each open buy-in it may (:meth:`.saga.BuyInSaga.resume`): its
own (left by a crash of this instance id, or unanswered by the table: again after a
pause growing from 1 s to 30 s), and another instance's once that one has not claimed
it for the take-over time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Final

from ..store.port import EventStore, Notification
from . import desk as desks
from .desk import DeskEvent, TableDesk
from .saga import PENDING, BuyInSaga, now_ms

log = logging.getLogger("studroom.cashier")

BATCH: Final = 1000              # notifications read at a time
FIRST_PAUSE: Final = 1.0         # seconds before an own pending buy-in is sent again ...
LONGEST_PAUSE: Final = 30.0      # ... doubling up to this


class OpenBuyIns:
    """The tables with a buy-in open, folded from the desks' events of a notification log."""

    def __init__(self) -> None:
        self.position = 0                          # the last notification id read
        self.desks: dict[str, TableDesk] = {}      # only the desks with a buy-in open

    def take(self, notifications: list[Notification]) -> None:
        for n in notifications:
            self.position = n.id
            if not (n.stream_id.startswith(desks.STREAM_PREFIX) and isinstance(n.event, DeskEvent)):
                continue
            table_id = n.stream_id[len(desks.STREAM_PREFIX):]
            desk = self.desks.get(table_id) or TableDesk(table_id)
            desk.apply(n.event)
            if desk.open is None:
                self.desks.pop(table_id, None)
            else:
                self.desks[table_id] = desk

    def claimable(self, owner: str, at_ms: int, takeover_ms: int) -> list[str]:
        return [t for t, desk in self.desks.items() if desk.claimable(owner, at_ms, takeover_ms)]


class Recovery:
    def __init__(self, store: EventStore, saga: BuyInSaga, *, every: float = 1.0) -> None:
        self.store = store
        self.saga = saga
        self.every = every
        self.open = OpenBuyIns()
        self.resumed = 0                            # buy-ins settled by a resume (confirmed or refunded)
        self._next_try: dict[str, tuple[float, float]] = {}    # table -> (monotonic time, pause)

    async def catch_up(self) -> None:
        while True:
            batch = await asyncio.to_thread(self.store.read_notifications, self.open.position + 1, BATCH)
            self.open.take(batch)
            if len(batch) < BATCH:
                return

    async def sweep(self) -> None:
        """Read what is new, then send again every open buy-in this instance may send now."""
        await self.catch_up()
        now = time.monotonic()
        due = [t for t in self.open.claimable(self.saga.owner, now_ms(), self.saga.takeover_ms)
               if not self.saga.busy(t) and self._next_try.get(t, (0.0, 0.0))[0] <= now]
        for table_id in list(self._next_try):
            if table_id not in self.open.desks:
                del self._next_try[table_id]
        await asyncio.gather(*(self._resume(t) for t in due))

    async def _resume(self, table_id: str) -> None:
        try:
            settled = await self.saga.resume(table_id)
        except Exception:
            log.exception("resuming the buy-in at %s failed: again later", table_id)
            settled = PENDING
        if settled is not None and settled.outcome == "pending":
            pause = min(self._next_try.get(table_id, (0.0, FIRST_PAUSE / 2))[1] * 2, LONGEST_PAUSE)
            self._next_try[table_id] = (time.monotonic() + pause, pause)
            return
        self._next_try.pop(table_id, None)
        if settled is not None:
            self.resumed += 1
            log.info("buy-in at %s resumed: %s", table_id, settled.outcome)

    async def run(self, stop: asyncio.Event) -> None:
        """Sweep every ``every`` seconds until ``stop``."""
        while not stop.is_set():
            try:
                await self.sweep()
            except Exception:
                log.exception("recovery sweep failed")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.every)
