"""The cashier's chip movements as double-entry bookings: an account's event in, entries out.

Pure.  The cashier's store holds each player's account (stream ``account.<P>``,
domain/account.py) and its desks at the tables (``desk.<T>``: which buy-in is in
flight, no chips).  Chips move:

- deposit: the world -> P's balance; withdrawal: P's balance -> the world;
- buy-in reserved: P's balance -> P's chips in transit; the table's ``ChipsBought``
  then moves them on to the seat (entries.py), and the cashier's confirmation moves
  nothing more; a refund: transit -> P's balance;
- cash-out: the table's ``PlayerLeft`` moves the seat's chips into transit, the
  cashier's ``CashedOut`` from transit to P's balance.

Entries are dated with the cashier's clock (``at_ms``).
"""

from __future__ import annotations

from typing import Any

import msgspec
from studroom.domain.account import (
    BuyInRefunded,
    BuyInReserved,
    CashedOut,
    Deposited,
    Withdrawn,
    player_of,
)

from . import accounts
from .entries import CASH_OUT_CREDIT, DEPOSIT, REFUND_BUY_IN, RESERVE, WITHDRAWAL, Entry


class CashierBook(msgspec.Struct):
    """An account's entries depend on nothing before them: nothing to remember."""


def account_entries(book: CashierBook, stream: str, event: Any) -> list[Entry]:
    """The entries of one event of the cashier's store."""
    name = player_of(stream)
    if name is None:
        return []
    balance, transit = accounts.player(name), accounts.transit(name)
    if isinstance(event, Deposited):
        return [Entry(DEPOSIT, balance, accounts.world(), event.amount, None, None, name, event.at_ms)]
    if isinstance(event, Withdrawn):
        return [Entry(WITHDRAWAL, accounts.world(), balance, event.amount, None, None, name, event.at_ms)]
    if isinstance(event, BuyInReserved):
        return [Entry(RESERVE, transit, balance, event.amount, event.table_id, None, name, event.at_ms)]
    if isinstance(event, BuyInRefunded):
        return [Entry(REFUND_BUY_IN, balance, transit, event.amount, event.table_id, None, name, event.at_ms)]
    if isinstance(event, CashedOut):
        return [Entry(CASH_OUT_CREDIT, balance, transit, event.amount, event.table_id, None, name, event.at_ms)]
    return []
