"""What the cashier refuses before it reserves anything: a buy-in the account or the
table would refuse costs no event, no lock and no command at the table
(docs/design/cashier.md, "Refused at the door").

Both checks are the domain's own rules, run on copies: the account's ``reserve`` on
the account as kept (and, if that refuses, as stored now: a refusal is never decided
on a stale copy), and the buy-in rule (domain/buy_ins.py) on the table as the cashier
sees it (``ViewTable``).  The table checks again when the ``BuyIn`` comes: what changed
between the view and the command (a hand started, the seat changed hands) is refused
there and refunded by the saga.
"""

from __future__ import annotations

from studroom.domain import buy_ins
from studroom.domain.buy_ins import SeatChips
from studroom.domain.commands import BuyIn
from studroom.domain.errors import DomainError
from studroom.domain.views import TableView

from ..client.table import TableClient
from .account_store import Books

_NOT_OPENED = "door"        # a stand-in table command id: the account's check on a copy opens nothing


def seat_chips(view: TableView, seat: int) -> SeatChips | None:
    """The seat as the buy-in rule needs it, from the table's view (None: nobody sits there)."""
    held = next((s for s in view.seats if s.seat == seat), None)
    if held is None:
        return None
    in_hand = view.hand is not None and any(p.seat == seat for p in view.hand.players)
    return SeatChips(seat, held.player, held.stack, in_hand)


async def check(books: Books, client: TableClient, player: str, table_id: str, seat: int, amount: int,
                request_id: str | None, at_ms: int) -> None:
    """Raise the refusal of ``player``'s buy-in (DomainError; ``client.table.Refused``
    when the table does not show itself), or return: it may be reserved."""
    for fresh in (False, True):
        account = await books.account(player, fresh=fresh)
        try:
            account.reserve(table_id, seat, amount, _NOT_OPENED, request_id, at_ms)
            break
        except DomainError:
            if fresh:
                raise
    view = await client.view(table_id)
    buy_in = BuyIn(seat=seat, amount=amount, player=player)
    buy_ins.check(view.config, seat_chips(view, seat), sum(s.stack for s in view.seats), buy_in)
