"""Where a bot's chips come from.

A player may not credit chips to his own seat (``forbidden``): a buy-in comes through
the cashier (the next step of the trust design), and until then from an operator.  So
a bot is handed a *bank*, an async callable ``(table_id, seat, amount) -> Reply`` that
credits its seat, or none (it then plays the chips someone credits it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from studroom.domain.commands import BuyIn

from ..wire.protocol import Reply
from .client import TableClient

Bank = Callable[[str, int, int], Awaitable[Reply]]


class OperatorBank:
    """Credits seats as an operator (the room's "floor", or ``serve bot
    --operator-creds``): a ``BuyIn`` sent with the operator's own client."""

    def __init__(self, client: TableClient) -> None:
        if client.role != "operator":
            raise ValueError(f"only an operator credits chips, not a {client.role}")
        self.client = client

    async def __call__(self, table_id: str, seat: int, amount: int) -> Reply:
        return await self.client.send(table_id, BuyIn(seat=seat, amount=amount))
