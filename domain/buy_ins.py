"""The buy-in rule (R3 in docs/rules.md), written once: the table applies it to a
``BuyIn``, and the cashier to the table as it sees it (a ``ViewTable``) before it
reserves anything, so a buy-in the table would refuse is refused at the cashier's door
and stores nothing (docs/design/cashier.md).

A buy-in (or top-up) names the player whose account paid for it: it goes only into a
seat that player holds (``forbidden`` otherwise: the chips would be someone else's).
A trusted caller inside the room (scripted hands, simulations) may leave the player
out; a sender may not (domain/authority.py).
"""

from __future__ import annotations

from typing import NamedTuple

from .commands import BuyIn
from .config import TableConfig
from .errors import (
    BAD_AMOUNT, FORBIDDEN, HAND_IN_PROGRESS, OVER_MAX_BUY_IN, SHORT_BUY_IN, UNKNOWN_SEAT, DomainError, quoted,
)
from .limits import MAX_TABLE_CHIPS


class SeatChips(NamedTuple):
    """What the rule needs of the seat bought into."""

    seat: int
    player: str              # who holds it
    stack: int               # his chips (during a hand: as it began)
    in_hand: bool            # dealt into the hand under way


def check(config: TableConfig, seat: SeatChips | None, table_chips: int, buy_in: BuyIn) -> None:
    """Raise the refusal of ``buy_in`` into ``seat`` (None: nobody sits there) at a table
    holding ``table_chips`` in all; return when the table would credit it."""
    if seat is None:
        raise DomainError(UNKNOWN_SEAT, f"nobody sits in seat {buy_in.seat}")
    if buy_in.player is not None and buy_in.player != seat.player:
        raise DomainError(FORBIDDEN, f"seat {buy_in.seat} is held by {quoted(seat.player)}, not "
                                     f"{quoted(buy_in.player)}: a buy-in goes only to the payer's own seat")
    if seat.in_hand:
        raise DomainError(HAND_IN_PROGRESS, "buy-ins and top-ups only between hands (R3)")
    amount = buy_in.amount
    if not isinstance(amount, int) or amount <= 0:
        raise DomainError(BAD_AMOUNT, "a buy-in is a positive whole number of chips")
    stack = seat.stack + amount
    if stack < config.min_buy_in:
        raise DomainError(SHORT_BUY_IN, f"the minimum buy-in is {config.min_buy_in} chips (R3)")
    if stack > config.buy_in_ceiling:
        raise DomainError(OVER_MAX_BUY_IN, f"a seat holds at most {config.buy_in_ceiling} chips after a buy-in (R3)")
    if table_chips + amount > MAX_TABLE_CHIPS:
        raise DomainError(OVER_MAX_BUY_IN, f"a table holds at most {MAX_TABLE_CHIPS} chips (domain/limits.py)")
