"""The buy-in saga: chips go from a player's account to his seat exactly once, or not
at all (docs/design/cashier.md).

0. **door**: what the account or the table would refuse is refused now, with nothing
   stored and no lock taken (``door.py``).
1. **reserve**: ``BuyInReserved`` in the account: the chips are off the balance, the
   buy-in is in flight, its table command id is the next of this player's at that
   table and this instance is its owner.
2. **send**: ``BuyIn(seat, amount, player, command_id)`` to the table as the service
   "cashier": the table credits only a seat that player holds.
3. **settle**: the table credited the seat -> ``BuyInConfirmed``; it refused ->
   ``BuyInRefunded`` (the chips are back); no answer -> the buy-in stays in flight
   (``pending``) and is sent again later (:meth:`BuyInSaga.resume`, by the recovery
   loop).  So a buy-in stores two events, refused or not.

A buy-in sent again that the table refuses as ``duplicate_command`` was carried out
the first time: the table numbers the cashier's buy-ins per player (domain/command_ids.py),
the ids of a player's buy-ins at a table rise, and only one of them is in flight at a
time (the account refuses a second: ``buy_in_in_flight``), so no later id of his was
sent to that table meanwhile.  A crash between any two steps leaves the buy-in in
flight in the account; whoever resumes it claims it first (``BuyInClaimed``, in the
same stream as the settlement: an instance that settles a buy-in another one claimed
meanwhile meets a version conflict) and sends the same command again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

import msgspec
from studroom.domain.account import Account, Reservation
from studroom.domain.commands import BuyIn
from studroom.domain.errors import DUPLICATE_COMMAND, DomainError

from ..client.table import TableClient
from ..store.port import VersionConflict
from ..wire import protocol
from ..wire.cashier_protocol import Outcome
from . import door
from .account_store import Books

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


class Busy(Exception):
    """The player's buy-in in flight at a table cannot be finished now (another instance
    holds it, or his account kept changing)."""


PENDING = Settled("pending", protocol.PENDING, "the buy-in is on its way: the cashier completes or undoes it")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def now_us() -> int:
    return time.time_ns() // 1_000


class BuyInSaga:
    """Runs buy-ins as ``owner`` (this instance), one at a time per player."""

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

    def busy(self, player: str) -> bool:
        lock = self._locks.get(player)
        return lock is not None and lock.locked()

    async def buy_in(self, player: str, table_id: str, seat: int, amount: int, request_id: str | None) -> Settled:
        """Check at the door, reserve, send, settle.  What the account or the table would
        refuse raises DomainError (``Refused`` when the table does not show itself) with
        nothing reserved and no lock taken; :class:`Busy` when the player's last buy-in
        at the table cannot be finished now."""
        await door.check(self.books, self.client, player, table_id, seat, amount, request_id, now_ms())
        async with self._lock(player):
            for attempt in range(ATTEMPTS):
                fresh = attempt > 0          # the first try writes from the kept copy
                account = await self.books.account(player, fresh=fresh)
                if account.open_at(table_id) is not None:
                    if fresh and (await self._resume_open(account, table_id)).outcome == "pending":
                        raise Busy(f"a buy-in of {player} at {table_id} is on its way")
                    continue
                command_id = account.next_buy_in_id(table_id, now_us())
                try:
                    reserved = account.reserve(table_id, seat, amount, command_id, request_id, now_ms(), self.owner)
                except DomainError:
                    if fresh:
                        raise
                    continue                 # refused on the kept copy: decide on what is stored
                try:
                    await self.books.save((account, [reserved]))
                except VersionConflict:
                    continue
                self._step("reserved")
                return await self._send(account, table_id, resumed=False)
            raise Busy(f"the account of {player} kept changing")

    async def resume(self, player: str, table_id: str) -> Settled | None:
        """Send ``player``'s buy-in in flight at ``table_id`` again if this instance may;
        None when none is in flight."""
        async with self._lock(player):
            account = await self.books.account(player)
            if account.open_at(table_id) is None:
                return None
            return await self._resume_open(account, table_id)

    async def _resume_open(self, account: Account, table_id: str) -> Settled:
        try:
            claimed = account.claim(table_id, self.owner, now_ms(), self.takeover_ms)
            await self.books.save((account, [claimed]))
        except (DomainError, VersionConflict):
            return PENDING
        return await self._send(account, table_id, resumed=True)

    async def _send(self, account: Account, table_id: str, *, resumed: bool) -> Settled:
        """Send the account's buy-in in flight at ``table_id`` (claimed by us just now)
        and settle it."""
        buy_in = account.open_at(table_id)
        assert buy_in is not None
        if not buy_in.fresh(self.owner, now_ms(), self.fresh_ms):
            return PENDING                  # our claim is old: another instance may take it over
        reply = await self.client.send(table_id, BuyIn(seat=buy_in.seat, amount=buy_in.amount, player=account.player,
                                                       command_id=buy_in.command_id))
        self._step("sent")
        code = reply.error.code if reply.error else None
        if reply.ok or (resumed and code == DUPLICATE_COMMAND):
            return await self._settle(account.player, buy_in, Settled("confirmed"))
        if code in UNDECIDED:
            log.info("buy-in %s at %s: %s; sent again later", buy_in.command_id, table_id, code)
            return PENDING
        if code == DUPLICATE_COMMAND:
            log.warning("buy-in %s of %s at %s refused as a duplicate on its first sending: the table has seen "
                        "a later id of the cashier for him (another cashier store?); refunded",
                        buy_in.command_id, account.player, table_id)
        message = reply.error.message if reply.error else "refused"
        return await self._settle(account.player, buy_in, Settled("refunded", code or "?", message))

    async def _settle(self, player: str, buy_in: Reservation, result: Settled) -> Settled:
        """Confirm or refund in the account, unless another instance claimed the buy-in
        meanwhile (or settled it)."""
        for attempt in range(ATTEMPTS):
            account = await self.books.account(player, fresh=attempt > 0)
            current = account.open_at(buy_in.table_id)
            if current is None or current.command_id != buy_in.command_id or current.owner != self.owner:
                return PENDING              # taken over (or settled) by another instance
            at = now_ms()
            if result.outcome == "confirmed":
                settled = account.confirm(buy_in.table_id, buy_in.command_id, at)
            else:
                settled = account.refund(buy_in.table_id, buy_in.command_id, result.code or "?", at)
            try:
                await self.books.save((account, [settled]))
            except VersionConflict:
                continue
            return result
        return PENDING

    def _lock(self, player: str) -> asyncio.Lock:
        lock = self._locks.get(player)
        if lock is None:
            if len(self._locks) > 10_000:
                self._locks = {p: held for p, held in self._locks.items() if held.locked()}
            lock = self._locks[player] = asyncio.Lock()
        return lock

    def _step(self, step: str) -> None:
        if self.after_step is not None:
            self.after_step(step)
