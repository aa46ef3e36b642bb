"""An asyncio client of the cashier, as one identity (players, operators: bots, the
room's floor, the CLI, tests).

    client = CashierClient(nc, "player", "alice")      # nc: connected as alice
    reply = await client.buy_chips("t01", seat=3, amount=1000)
    floor = CashierClient(nc_floor, "operator", "floor")
    await floor.deposit("alice", 5000, "wire-0042")

Requests go to the identity's own subject (``subjects.cashier_requests``).  What
changed nothing is retried with the same body for up to ``retry_for`` seconds
(:mod:`.requests`, the table client's loop too).  A retry after a lost reply may find
the first attempt carried out: a deposit or withdrawal is then refused
``duplicate_reference`` (answered as done), a buy-in ``duplicate_command`` (answered
``pending``: its outcome is in the account's movements).
"""

from __future__ import annotations

from typing import Any

from studroom.domain.errors import DUPLICATE_COMMAND, DUPLICATE_REFERENCE

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
from .ids import CommandIds
from .requests import Requests


def _carried_out(reply: CashierReply) -> CashierReply | None:
    """The answer to a retry refused because an earlier attempt got through: a
    deposit's or withdrawal's reference is taken (done), a buy-in's id is used (on its
    way, or settled: its outcome is in the movements)."""
    code = reply.error.code if reply.error else None
    if code == DUPLICATE_REFERENCE:
        return CashierReply(ok=True, player=reply.player)
    if code == DUPLICATE_COMMAND:
        return refusal(protocol.PENDING, "an earlier attempt of this buy-in got through; see the movements")
    return None


class CashierClient:
    def __init__(self, nc: Any, role: str, name: str, *, retry_for: float = 10.0,
                 ids: CommandIds | None = None) -> None:
        self.nc = nc
        self.role = role
        self.name = name
        self.subject = subjects.cashier_requests(role, name)
        self.ids = ids or CommandIds()
        self.requests = Requests(nc, retry_for=retry_for, decode=decode_reply, refusal=refusal,
                                 carried_out=_carried_out)

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
        return await self.requests.request(self.subject, encode(request), timeout)
