"""Finishing the buy-ins left in flight (docs/design/cashier.md, "Crashes").

Every instance follows its store's notification log from the start: the accounts'
buy-in events say which player has a buy-in in flight at which table, whose it is and
when it was last claimed.  While any is in flight, every second it sends again each one
it may (:meth:`.saga.BuyInSaga.resume`): its own (left by a crash of this instance id,
or unanswered by the table: again after a pause growing from 1 s to 30 s), and another
instance's once that one has not claimed it for the take-over time.

The log is read only when a commit of the store was heard since the last read
(:class:`..store.commits.Commits`: every instance's appends), at most every second: with
no buy-in in flight and nothing written to the accounts, an instance does nothing at all
(issue 20).  Without a listener (none, or its connection down) it reads every
second as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Final

from studroom.domain.account import BuyInStep, Reservation, in_flight_after, player_of

from ..runtime.retry import Backoff
from ..store.commits import Commits
from ..store.port import EventStore, Notification
from .saga import PENDING, BuyInSaga, now_ms

log = logging.getLogger("studroom.cashier")

BATCH: Final = 1000              # notifications read at a time
# An own pending buy-in is sent again after 1 s, doubling up to 30 s (jittered: docs/design/retries.md).
PENDING_RETRY: Final = Backoff(first=1.0, longest=30.0)

InFlight = tuple[str, str]       # (player, table)


class OpenBuyIns:
    """The buy-ins in flight, folded from the accounts' events of a notification log."""

    def __init__(self) -> None:
        self.position = 0                                  # the last notification id read
        self.in_flight: dict[InFlight, Reservation] = {}

    def take(self, notifications: list[Notification]) -> None:
        for n in notifications:
            self.position = n.id
            player, event = player_of(n.stream_id), n.event
            if player is None:
                continue
            if not isinstance(event, BuyInStep):
                continue
            key = (player, event.table_id)
            reservation = in_flight_after(self.in_flight.get(key), event)
            if reservation is None:
                self.in_flight.pop(key, None)
            else:
                self.in_flight[key] = reservation

    def claimable(self, owner: str, at_ms: int, takeover_ms: int) -> list[InFlight]:
        return [key for key, r in self.in_flight.items() if r.claimable(owner, at_ms, takeover_ms)]


class Recovery:
    def __init__(self, store: EventStore, saga: BuyInSaga, *, every: float = 1.0,
                 commits: Commits | None = None) -> None:
        self.store = store
        self.saga = saga
        self.every = every
        self.commits = commits
        self.reads = 0                              # reads of the notification log (tests)
        self.open = OpenBuyIns()
        self.resumed = 0                            # buy-ins settled by a resume (confirmed or refunded)
        self._next_try: dict[InFlight, tuple[float, Iterator[float]]] = {}    # (monotonic time, its pauses)

    async def catch_up(self) -> None:
        while True:
            self.reads += 1
            batch = await asyncio.to_thread(self.store.read_notifications, self.open.position + 1, BATCH)
            self.open.take(batch)
            if len(batch) < BATCH:
                return

    async def sweep(self, read: bool = True) -> None:
        """Read what is new (``read``), then send again every open buy-in this instance
        may send now."""
        if read:
            await self.catch_up()
        now = time.monotonic()
        due = [key for key in self.open.claimable(self.saga.owner, now_ms(), self.saga.takeover_ms)
               if not self.saga.busy(key[0]) and (key not in self._next_try or self._next_try[key][0] <= now)]
        for key in list(self._next_try):
            if key not in self.open.in_flight:
                del self._next_try[key]
        await asyncio.gather(*(self._resume(key) for key in due))

    async def _resume(self, key: InFlight) -> None:
        player, table_id = key
        try:
            settled = await self.saga.resume(player, table_id)
        except Exception:
            log.exception("resuming the buy-in of %s at %s failed: again later", player, table_id)
            settled = PENDING
        if settled is not None and settled.outcome == "pending":
            pauses = self._next_try[key][1] if key in self._next_try else PENDING_RETRY.pauses()
            self._next_try[key] = (time.monotonic() + next(pauses), pauses)
            return
        self._next_try.pop(key, None)
        if settled is not None:
            self.resumed += 1
            log.info("buy-in of %s at %s resumed: %s", player, table_id, settled.outcome)

    async def run(self, stop: asyncio.Event) -> None:
        """Sweep until ``stop``: at once, then at most every ``every`` seconds while a
        buy-in is in flight or nobody listens, else when a commit is heard."""
        if self.commits is None:
            await self._sweeps(stop, None)
            return
        listener = asyncio.ensure_future(self.commits.run())
        try:
            await self._sweeps(stop, self.commits)
        finally:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)

    async def _sweeps(self, stop: asyncio.Event, commits: Commits | None) -> None:
        while not stop.is_set():
            read = commits is None or not commits.listening or commits.wake.is_set()
            if commits is not None:
                commits.take()                       # a commit from now on is read next time
            try:
                await self.sweep(read)
            except Exception:
                log.exception("recovery sweep failed")
                if commits is not None:
                    commits.wake.set()               # read again
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.every)
            if commits is not None and commits.listening and not self.open.in_flight:
                await commits.wait(stop)
