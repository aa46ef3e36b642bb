"""The books of the cashier beside its accounts and the tables: the pure half of
reconciling the money that comes in, goes to the tables, comes back and goes out.

- :class:`AccountAudit` follows one account's stream with its booked entries: the
  books hold exactly the entries of each stored event (account_entries.py), and the
  balance the books give the account is the balance the domain's own replay of the
  account gives (domain/account.py).
- :func:`transfers` matches the two sides of every transfer between the cashier and
  a table: a confirmed buy-in was credited at its table (``ChipsBought`` with the
  cashier's command id) with the same chips for the same player, a refunded one was
  not, and every buy-in through the cashier had a reservation; every ``CashedOut``
  credits a ``PlayerLeft`` of that player with those chips.  What is left over is the
  domain's count of the chips in transit: reservations the table has not credited yet,
  and chips of players who left and whom the cashier has not credited yet.

The cross checks are exact on a running room too when both stores are read as of one
cut (cut.py): a transfer is then whole, or half done and counted in transit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from studroom.domain.account import (
    Account,
    BuyInConfirmed,
    BuyInRefunded,
    BuyInReserved,
    CashedOut,
    buy_in_key,
    player_of,
)

from . import accounts
from .account_entries import CashierBook, account_entries
from .table_audit import BOOKS_VS_STORE, Difference, TableAudit, Transfer, mismatch

ACCOUNT: Final = "account"
TRANSFER: Final = "transfer"


@dataclass
class Reservation:
    table: str
    command_id: str
    amount: int
    event: str
    settled: str | None = None        # "confirmed" or "refunded"


class AccountAudit:
    """One stream of the cashier's store beside its booked entries."""

    def __init__(self, store: str, stream: str) -> None:
        self.store = store
        self.stream = stream
        self.player = player_of(stream)
        self.account = Account(self.player or "")
        self.books_balance = 0
        self.reservations: dict[str, Reservation] = {}
        self.cashed: dict[tuple[str, int], Transfer] = {}       # (table, version of PlayerLeft)
        self.differences: list[Difference] = []
        self._book = CashierBook()
        self._where = ""
        self._at_ms: int | None = None

    def event(self, version: int, event: Any, booked: list[Any]) -> None:
        self._where = f"{self.store} {self.stream} v{version} ({type(event).__name__})"
        self._at_ms = getattr(event, "at_ms", None)
        expected = account_entries(self._book, self.stream, event)
        if booked != expected:
            self._differ(BOOKS_VS_STORE, mismatch(booked, expected))
        balance = accounts.player(self.player or "")
        self.books_balance += sum(e.amount for e in booked if e.debit == balance)
        self.books_balance -= sum(e.amount for e in booked if e.credit == balance)
        if self.player is None:
            return
        try:
            self.account.apply(event)
        except Exception as e:  # noqa: BLE001 (an account that cannot be replayed is the finding)
            self._differ(ACCOUNT, f"the domain cannot replay the account: {type(e).__name__}: {e}")
        self._follow(event)

    def _follow(self, event: Any) -> None:
        """Remember the account's side of each transfer."""
        if isinstance(event, BuyInReserved):
            key = buy_in_key(event.table_id, event.command_id)
            self.reservations[key] = Reservation(event.table_id, event.command_id, event.amount, self._where)
        elif isinstance(event, (BuyInConfirmed, BuyInRefunded)):
            r = self.reservations.get(buy_in_key(event.table_id, event.command_id))
            if r is not None:
                r.settled = "confirmed" if isinstance(event, BuyInConfirmed) else "refunded"
        elif isinstance(event, CashedOut):
            self.cashed[(event.table_id, event.version)] = Transfer(self.player or "", event.amount, self._where)

    def missing(self, version: int) -> None:
        self._where = f"{self.store} {self.stream} v{version}"
        self._differ(BOOKS_VS_STORE, "the books hold entries of an event the store does not have")

    def finish(self) -> None:
        if self.player is not None and self.books_balance != self.account.balance:
            self._where = f"{self.store} {self.stream} (after its last event)"
            self._differ(ACCOUNT, f"the account's balance is {self.account.balance}, the books hold "
                                  f"{self.books_balance}")

    def _differ(self, check: str, what: str) -> None:
        self.differences.append(Difference(check, what, None, None, self.player, self._where, self._at_ms))


@dataclass
class Transfers:
    """The cross checks' findings, and the domain's chips in transit."""

    differences: list[Difference] = field(default_factory=list)
    in_transit: int = 0


def transfers(tables: Iterable[TableAudit], cashier: Iterable[AccountAudit]) -> Transfers:
    """Match both sides of every transfer between the cashier and the tables."""
    out = Transfers()
    by_table = {t.table: t for t in tables}
    reserved: set[tuple[str, str, str]] = set()          # (table, player, command id): numbered per player
    credited: set[tuple[str, int]] = set()
    for account in cashier:
        for r in account.reservations.values():
            reserved.add((r.table, account.player or "", r.command_id))
            _buy_in(out, account.player or "", r, by_table.get(r.table))
        for (table, version), cash in account.cashed.items():
            credited.add((table, version))
            audit = by_table.get(table)
            left = None if audit is None else audit.left.get(version)
            if audit is not None and (left is None or (left.player, left.amount) != (cash.player, cash.amount)):
                seen = "no PlayerLeft with chips" if left is None else f"{left.player} left with {left.amount}"
                out.differences.append(_transfer(f"credits {cash.amount} chips for {table} v{version}, where "
                                                 f"the table stored {seen}", cash.player, cash.event))
    for audit in by_table.values():
        for (player, command_id), bought in audit.buy_ins.items():
            if (audit.table, player, command_id) not in reserved:
                out.differences.append(_transfer(f"{bought.amount} chips bought through the cashier "
                                                 f"(command {command_id}) that no account reserved",
                                                 bought.player, bought.event, audit.table))
        out.in_transit += sum(left.amount for version, left in audit.left.items()
                              if (audit.table, version) not in credited)
    return out


def _buy_in(out: Transfers, player: str, r: Reservation, table: TableAudit | None) -> None:
    """One reservation beside its table's side (when that table was audited)."""
    if table is None:
        out.in_transit += r.amount if r.settled is None else 0
        return
    bought = table.buy_ins.get((player, r.command_id))
    if bought is None:
        if r.settled == "confirmed":
            out.differences.append(_transfer(f"a confirmed buy-in of {r.amount} chips at {r.table} that the "
                                             "table never credited", player, r.event, r.table))
        elif r.settled is None:
            out.in_transit += r.amount
        return
    if r.settled == "refunded":
        out.differences.append(_transfer(f"a refunded buy-in of {r.amount} chips that {r.table} credited too "
                                         f"({bought.event})", player, r.event, r.table))
    if (bought.player, bought.amount) != (player, r.amount):
        out.differences.append(_transfer(f"{player} reserved {r.amount} chips, {r.table} credited "
                                         f"{bought.amount} to {bought.player} ({bought.event})",
                                         player, r.event, r.table))


def _transfer(what: str, player: str, event: str, table: str | None = None) -> Difference:
    return Difference(TRANSFER, what, table, None, player, event)
