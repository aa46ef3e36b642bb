"""The buy-in saga: chips go from a player's account to his seat exactly once, or not
at all (docs/design/cashier.md).

0. **door**: what the account or the table would refuse is refused now, with nothing
   stored and no lock taken (``door.py``).
1. **reserve**: the account takes the chips off the balance and the table's desk opens
   the buy-in, in one transaction; its id is the cashier's next at that table.
2. **send**: ``BuyIn(seat, amount, player, command_id)`` to the table as the service
   "cashier": the table credits only a seat that player holds.
3. **settle**: the table credited the seat -> ``confirm``; it refused -> ``refund`` (the
   chips are back); no answer -> the buy-in stays open (``pending``) and is sent again
   later (:meth:`BuyInSaga.resume`, by the recovery loop).

A buy-in sent again that the table refuses as ``duplicate_command`` was carried out
the first time: the table's last id of the cashier is at least this one, and no later
one was sent to that table while this one was open (one buy-in at a time per table:
``desk.py``).  A crash between any two steps leaves the buy-in open in the store;
whoever resumes it claims it first and sends the same command again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

import msgspec
from studroom.domain.commands import BuyIn
from studroom.domain.errors import DUPLICATE_COMMAND, DomainError

from ..players.client import TableClient
from ..store.port import VersionConflict
from ..wire import protocol
from . import door
from .books import Books
from .desk import Busy, OpenBuyIn, TableDesk
from .protocol import Outcome

log = logging.getLogger("studroom.cashier")

SENDER: Final = "cashier"                 # the service identity buy-ins come from
ATTEMPTS: Final = 8                       # loads and writes after version conflicts
TAKEOVER_MS: Final = 30_000               # another instance resumes a buy-in unclaimed this long
FRESH_MS: Final = 10_000                  # an owner sends only this soon after its claim
# The table said nothing that tells whether it carried the buy-in out: send it again later.
UNDECIDED: Final = protocol.RETRYABLE | {protocol.BAD_REPLY}

Step = Callable[[str], None]              # called after "reserved" and after "sent" (fault hook)


class Settled(msgspec.Struct, frozen=True):
    """How a buy-in ended for now: confirmed, refunded (``code``: the table's refusal),
    or pending (sent again later)."""

    outcome: Outcome
    code: str | None = None
    message: str = ""


PENDING = Settled("pending", protocol.PENDING, "the buy-in is on its way: the cashier completes or undoes it")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def now_us() -> int:
    return time.time_ns() // 1_000


class BuyInSaga:
    """Runs buy-ins as ``owner`` (this instance), one at a time per table."""

    def __init__(self, books: Books, client: TableClient, owner: str, *, takeover_ms: int = TAKEOVER_MS,
                 fresh_ms: int = FRESH_MS, after_step: Step | None = None) -> None:
        if client.role != "service" or client.name != SENDER:
            raise ValueError(f"buy-ins are sent as the service {SENDER!r}")
        self.books = books
        self.client = client
        self.owner = owner
        self.takeover_ms = takeover_ms
        self.fresh_ms = min(fresh_ms, takeover_ms)
        self.after_step = after_step
        self._locks: dict[str, asyncio.Lock] = {}

    def busy(self, table_id: str) -> bool:
        lock = self._locks.get(table_id)
        return lock is not None and lock.locked()

    async def buy_in(self, player: str, table_id: str, seat: int, amount: int, request_id: str | None) -> Settled:
        """Check at the door, reserve, send, settle.  What the account or the table would
        refuse raises DomainError (``Refused`` when the table does not show itself) with
        nothing reserved and the table's lock never taken; :class:`Busy` when another
        buy-in at the table cannot be finished now."""
        await door.check(self.books, self.client, player, table_id, seat, amount, request_id, now_ms())
        async with self._lock(table_id):
            for attempt in range(ATTEMPTS):
                fresh = attempt > 0          # the first try writes from the kept copies
                desk = await self.books.desk(table_id, fresh=fresh)
                if desk.open is not None:
                    if fresh and (await self._resume_open(desk)).outcome == "pending":
                        raise Busy(f"a buy-in at {table_id} is on its way")
                    continue
                account = await self.books.account(player, fresh=fresh)
                at = now_ms()
                command_id = desk.next_command_id(now_us())
                try:
                    reserved = account.reserve(table_id, seat, amount, command_id, request_id, at)
                except DomainError:
                    if fresh:
                        raise
                    continue                 # refused on the kept copy: decide on what is stored
                opened = desk.open_buy_in(player, seat, amount, command_id, self.owner, at)
                try:
                    await self.books.save((account, [reserved]), (desk, [opened]))
                except VersionConflict:
                    continue
                self._step("reserved")
                return await self._send(desk, resumed=False)
            raise Busy(f"the cashier's books of {table_id} kept changing")

    async def resume(self, table_id: str) -> Settled | None:
        """Send the buy-in open at ``table_id`` again if this instance may; None when
        none is open."""
        async with self._lock(table_id):
            desk = await self.books.desk(table_id)
            if desk.open is None:
                return None
            return await self._resume_open(desk)

    async def _resume_open(self, desk: TableDesk) -> Settled:
        try:
            claimed = desk.claim(self.owner, now_ms(), self.takeover_ms)
            await self.books.save((desk, [claimed]))
        except (Busy, VersionConflict):
            return PENDING
        return await self._send(desk, resumed=True)

    async def _send(self, desk: TableDesk, *, resumed: bool) -> Settled:
        """Send the desk's open buy-in (claimed by us just now) and settle it."""
        buy_in = desk.open
        assert buy_in is not None
        if not desk.fresh(self.owner, now_ms(), self.fresh_ms):
            return PENDING                  # our claim is old: another instance may take it over
        reply = await self.client.send(desk.table_id, BuyIn(seat=buy_in.seat, amount=buy_in.amount,
                                                            player=buy_in.player, command_id=buy_in.command_id))
        self._step("sent")
        code = reply.error.code if reply.error else None
        if reply.ok or (resumed and code == DUPLICATE_COMMAND):
            return await self._settle(desk.table_id, buy_in, Settled("confirmed"))
        if code in UNDECIDED:
            log.info("buy-in %s at %s: %s; sent again later", buy_in.command_id, desk.table_id, code)
            return PENDING
        if code == DUPLICATE_COMMAND:
            log.warning("buy-in %s at %s refused as a duplicate on its first sending: the table has seen "
                        "a later id of the cashier (another cashier store?); refunded",
                        buy_in.command_id, desk.table_id)
        message = reply.error.message if reply.error else "refused"
        return await self._settle(desk.table_id, buy_in, Settled("refunded", code or "?", message))

    async def _settle(self, table_id: str, buy_in: OpenBuyIn, result: Settled) -> Settled:
        """Confirm or refund in the account and close the desk, in one transaction,
        unless another instance took the buy-in over meanwhile."""
        for attempt in range(ATTEMPTS):
            desk = await self.books.desk(table_id, fresh=attempt > 0)
            if desk.open is None or desk.open.command_id != buy_in.command_id or desk.open.owner != self.owner:
                return PENDING              # taken over (or settled) by another instance
            account = await self.books.account(buy_in.player, fresh=attempt > 0)
            at = now_ms()
            if result.outcome == "confirmed":
                settled = account.confirm(table_id, buy_in.command_id, at)
                closed = desk.close(buy_in.command_id, "confirmed", at)
            else:
                settled = account.refund(table_id, buy_in.command_id, result.code or "?", at)
                closed = desk.close(buy_in.command_id, "refunded", at)
            try:
                await self.books.save((account, [settled]), (desk, [closed]))
            except VersionConflict:
                continue
            return result
        return PENDING

    def _lock(self, table_id: str) -> asyncio.Lock:
        lock = self._locks.get(table_id)
        if lock is None:
            if len(self._locks) > 10_000:
                self._locks = {t: held for t, held in self._locks.items() if held.locked()}
            lock = self._locks[table_id] = asyncio.Lock()
        return lock

    def _step(self, step: str) -> None:
        if self.after_step is not None:
            self.after_step(step)
