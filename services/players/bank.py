"""Where a bot's chips come from.

A player may not credit chips to his own seat (``forbidden``): a buy-in comes through
the cashier, from the player's own account (docs/design/cashier.md).  So a bot is
handed a *bank*, an async callable ``(table_id, seat, amount) -> Reply`` that credits
its seat, or none (it then plays the chips someone credits it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..client.cashier import CashierClient
from ..wire.protocol import Reply

Bank = Callable[[str, int, int], Awaitable[Reply]]


class CashierBank:
    """A player's buy-ins and top-ups through the cashier: his account pays, the
    cashier's saga credits his seat (or refunds him, with the table's refusal)."""

    def __init__(self, client: CashierClient) -> None:
        if client.role != "player":
            raise ValueError(f"a player buys in for himself, not a {client.role}")
        self.client = client

    async def __call__(self, table_id: str, seat: int, amount: int) -> Reply:
        reply = await self.client.buy_chips(table_id, seat, amount)
        return Reply(ok=reply.ok, error=reply.error)
