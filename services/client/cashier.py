"""An asyncio client of the cashier, as one identity (players, operators: bots, the
room's floor, the CLI, tests).

    client = CashierClient(nc, "player", "alice")      # nc: connected as alice
    reply = await client.buy_chips("t01", seat=3, amount=1000)
    floor = CashierClient(nc_floor, "operator", "floor")
    await floor.deposit("alice", 5000, "wire-0042")

Requests go to the identity's own subject (``subjects.cashier_requests``).  What
changed nothing is retried with the same body (no responder yet, ``protocol.RETRYABLE``,
a NATS error) with a growing pause for up to ``retry_for`` seconds.  A retry after a
lost reply may find the first attempt carried out: a deposit or withdrawal is then
refused ``duplicate_reference`` (answered as done), a buy-in ``duplicate_command``
(answered ``pending``: its outcome is in the account's movements).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec
import nats.errors
from studroom.domain.errors import DUPLICATE_COMMAND, DUPLICATE_REFERENCE

from .ids import CommandIds
from ..wire import protocol, subjects
from ..wire.cashier_protocol import (
    Balance,
    BuyChips,
    CashierReply,
    CashierRequest,
    Deposit,
    Movements,
    Withdraw,
    decode_reply,
    encode,
    refusal,
)

FIRST_PAUSE = 0.05      # seconds before the first retry; doubled each time ...
LONGEST_PAUSE = 1.0     # ... up to this

# What a retried request's refusal means when an earlier attempt may have got through.
_CARRIED_OUT = {DUPLICATE_REFERENCE: "done", DUPLICATE_COMMAND: protocol.PENDING}


class CashierClient:
    def __init__(self, nc: Any, role: str, name: str, *, retry_for: float = 10.0,
                 ids: CommandIds | None = None) -> None:
        self.nc = nc
        self.role = role
        self.name = name
        self.subject = subjects.cashier_requests(role, name)
        self.retry_for = retry_for
        self.ids = ids or CommandIds()

    async def balance(self, player: str | None = None) -> CashierReply:
        return await self.request(Balance(player=player))

    async def movements(self, player: str | None = None, after: int = 0) -> CashierReply:
        return await self.request(Movements(player=player, after=after))

    async def deposit(self, player: str, amount: int, reference: str) -> CashierReply:
        return await self.request(Deposit(player=player, amount=amount, reference=reference))

    async def withdraw(self, player: str, amount: int, reference: str) -> CashierReply:
        return await self.request(Withdraw(player=player, amount=amount, reference=reference))

    async def buy_chips(self, table_id: str, seat: int, amount: int) -> CashierReply:
        """A buy-in or top-up of this player's seat, numbered with his next request id."""
        return await self.request(BuyChips(table_id=table_id, seat=seat, amount=amount,
                                           request_id=self.ids.next()))

    async def request(self, request: CashierRequest, timeout: float = 5.0) -> CashierReply:
        """Ask until a reply that is not retryable, or ``retry_for`` is over."""
        data = encode(request)
        deadline = time.monotonic() + self.retry_for
        pause = FIRST_PAUSE
        maybe_done = False
        last = "no reply"
        while True:
            try:
                msg = await self.nc.request(self.subject, data, timeout=timeout)
            except nats.errors.NoRespondersError:
                last = "no cashier is running"
            except nats.errors.ConnectionClosedError:
                return refusal(protocol.UNAVAILABLE, "the NATS connection is closed")
            except (nats.errors.TimeoutError, nats.errors.Error) as e:
                maybe_done = True              # it may have got through
                last = f"no reply ({type(e).__name__})"
            else:
                try:
                    reply = decode_reply(msg.data)
                except (msgspec.DecodeError, msgspec.ValidationError) as e:
                    return refusal(protocol.BAD_REPLY, str(e))
                code = reply.error.code if reply.error else None
                if maybe_done and code in _CARRIED_OUT:
                    return _carried_out(code, reply)
                if code not in protocol.RETRYABLE:
                    return reply
                last = f"{code}: {reply.error.message if reply.error else ''}"
            if time.monotonic() + pause > deadline:
                return refusal(protocol.UNAVAILABLE, f"gave up after {self.retry_for}s: {last}")
            await asyncio.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE)


def _carried_out(code: str | None, reply: CashierReply) -> CashierReply:
    """The answer to a retry refused because an earlier attempt got through."""
    if _CARRIED_OUT.get(code or "") == "done":
        return CashierReply(ok=True, player=reply.player)
    return refusal(protocol.PENDING, "an earlier attempt of this buy-in got through; see the movements")
