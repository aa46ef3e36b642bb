"""The books of one table beside the domain's own results: the pure half of reconcile.

:class:`TableAudit` follows a table's stream event by event, with the entries the books
hold for each event, and finds where they part:

- **books vs store**: the booked entries are exactly those the stored event gives
  (entries.py), no more, no fewer;
- **hand**: at the start of every hand each dealt-in player's seat holds in the books
  the stack the hand started with; at its end (``HandEnded``) every chip put in went
  into a pot or back, every pot was paid out, the rake booked is the hand's rake, and
  every seat holds the final stack the domain computed (a player who left during the
  hand: what he cashed out); a cancelled hand refunded everything;
- **table**: after the last event the books' chips of the table (bought, on the seats,
  in the hand under way, rake, cashed out) are those of the domain's own replay of the
  table (conservation.py), which also checks its own equation between every two hands.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final, NamedTuple

import msgspec
from studroom.domain.events import (
    ChipsBought,
    HandCancelled,
    HandEnded,
    HandStarted,
    PlayerLeft,
)

from . import accounts
from .conservation import ChipCheck, TableChips
from .entries import (
    BUY_IN,
    CASH_OUT,
    CASHIER,
    CREDIT,
    POT,
    RAKE,
    Entry,
    TableBook,
    Unbookable,
    table_entries,
)

BOOKS_VS_STORE: Final = "books vs store"
HAND: Final = "hand"
TABLE: Final = "table"


class Difference(msgspec.Struct, frozen=True):
    """One thing that does not add up, and where it was found."""

    check: str
    what: str
    table: str | None = None
    hand: int | None = None
    player: str | None = None
    event: str | None = None          # "<store> <stream> v<version> (<event type>)"
    at_ms: int | None = None


class Transfer(NamedTuple):
    """Chips between a table and the cashier, as one side stored them."""

    player: str
    amount: int
    event: str


def describe(entry: Entry) -> str:
    return f"{entry.kind} {entry.amount} {entry.credit} -> {entry.debit}"


class TableAudit:
    """One table's stream, each stored event beside its booked entries (``event``), and
    the table's totals at the end (``finish``).  Differences collect in ``differences``."""

    def __init__(self, store: str, table: str) -> None:
        self.store = store
        self.table = table
        self.book = TableBook()
        self.chips = TableChips(table)
        self.balances: dict[str, int] = defaultdict(int)       # the books' balances of the table's accounts
        self.moved: dict[str, int] = defaultdict(int)          # the books' buy-ins and cash-outs by kind
        self.raked: dict[int, int] = defaultdict(int)          # hand -> the rake the books took
        self.players: dict[int, set[str]] = {}                 # hand -> who was dealt in
        self.buy_ins: dict[tuple[str, str], Transfer] = {}     # (player, the cashier's command id) -> its ChipsBought
        self.left: dict[int, Transfer] = {}                    # version -> a PlayerLeft with chips
        self.differences: list[Difference] = []
        self._hand: HandStarted | None = None
        self._cashed: dict[int, int] = {}                      # seat -> cashed out during the hand
        self._pots: dict[int, set[str]] = {}                   # hand -> its pot accounts in the books
        self._where = ""

    def event(self, version: int, event: Any, booked: list[Entry]) -> None:
        """The next stored event of the stream and the entries the books hold for it."""
        self._where = f"{self.store} {self.table} v{version} ({type(event).__name__})"
        hand = self.book.hand
        try:
            expected = table_entries(self.book, self.table, event)
        except Unbookable as e:
            self._differ(BOOKS_VS_STORE, f"the stored event cannot be booked: {e}", hand)
            expected = []
        if booked != expected:
            player = next((e.player for e in [*booked, *expected] if e.player), None)
            self._differ(BOOKS_VS_STORE, mismatch(booked, expected), hand if hand is not None else self.book.hand,
                         player)
        for entry in booked:
            self.balances[entry.debit] += entry.amount
            self.balances[entry.credit] -= entry.amount
            if entry.kind in (BUY_IN, CREDIT, CASH_OUT):
                self.moved[entry.kind] += entry.amount
            elif entry.kind == RAKE and entry.hand is not None:
                self.raked[entry.hand] += entry.amount
            elif entry.kind == POT and entry.hand is not None:
                self._pots.setdefault(entry.hand, set()).add(entry.debit)
        self.chips.add(event)
        if isinstance(event, HandStarted):
            self._started(event)
        elif isinstance(event, ChipsBought):
            self._bought(event)
        elif isinstance(event, PlayerLeft):
            self._left(version, event)
        elif isinstance(event, HandEnded):
            self._ended(event)
        elif isinstance(event, HandCancelled):
            self._all_back(event.hand_no)
            self._hand = None

    def missing(self, version: int) -> None:
        """The books hold entries of an event the store does not have."""
        self._where = f"{self.store} {self.table} v{version}"
        self._differ(BOOKS_VS_STORE, "the books hold entries of an event the store does not have", None)

    def _bought(self, e: ChipsBought) -> None:
        sender, _, number = (e.command_id or "").partition("#")
        player = self.book.seats.get(e.seat)
        if sender == CASHIER and player is not None:
            self.buy_ins[player, number] = Transfer(player, e.amount, self._where)   # numbered per player

    def _left(self, version: int, e: PlayerLeft) -> None:
        if e.cashed_out:
            self.left[version] = Transfer(e.player, e.cashed_out, self._where)
        if self._hand is not None:
            self._cashed[e.seat] = e.cashed_out

    def _started(self, e: HandStarted) -> None:
        self._hand, self._cashed = e, {}
        self.players[e.hand_no] = {s.player for s in e.seats}
        for s in e.seats:
            self._stack(e.hand_no, s.seat, s.player, s.stack, "starts the hand with")

    def _ended(self, e: HandEnded) -> None:
        self._all_back(e.hand_no)
        booked_rake = self.raked.pop(e.hand_no, 0)
        if booked_rake != e.rake:
            self._differ(HAND, f"the hand's rake is {e.rake}, the books took {booked_rake}", e.hand_no)
        start = self._hand
        for s in start.seats if start is not None and start.hand_no == e.hand_no else []:
            final = e.stacks.get(s.seat)
            if final is not None:
                self._stack(e.hand_no, s.seat, s.player, final - self._cashed.get(s.seat, 0), "ends the hand with")
        self._hand = None

    def _stack(self, hand_no: int, seat: int, player: str, stack: int, when: str) -> None:
        """The books must hold ``stack`` on the seat; a difference is reported once, where
        it shows: the books' figure is then taken as the domain's."""
        account = accounts.seat(self.table, seat, player)
        if self.balances[account] != stack:
            self._differ(HAND, f"seat {seat} {when} {stack} chips, the books hold {self.balances[account]}",
                         hand_no, player)
            self.balances[account] = stack

    def _all_back(self, hand_no: int) -> None:
        """After a hand every chip put in is in a pot, returned or refunded; every pot paid."""
        hand = accounts.hand(self.table, hand_no)
        if self.balances.get(hand, 0):
            self._differ(HAND, f"{self.balances[hand]} chips put into the hand went into no pot and back to "
                               "nobody", hand_no)
        pots = sorted(self._pots.pop(hand_no, set()))
        for pot in pots:
            if self.balances.get(pot, 0):
                self._differ(HAND, f"{pot} keeps {self.balances[pot]} chips after the awards", hand_no)
        for account in (hand, *pots):      # reported: not again at the table's end
            self.balances.pop(account, None)

    def finish(self) -> ChipCheck:
        """The table's totals in the domain's replay, each compared with the books."""
        chips = self.chips.result()
        self._where = f"{self.store} {self.table} (after its last event)"
        for bad in chips.bad:
            self._differ(TABLE, f"the domain's replay: {bad}", None)
        books = {
            "bought": self.moved[BUY_IN] + self.moved[CREDIT],
            "on the seats": self._sum(accounts.SEAT),
            "in the hand under way": self._sum(accounts.HAND) + self._sum(accounts.POT),
            "rake": self._sum(accounts.RAKE),
            "cashed out": self.moved[CASH_OUT],
        }
        domain = {"bought": chips.bought, "on the seats": chips.behind, "in the hand under way": chips.in_hand,
                  "rake": chips.rake, "cashed out": chips.cashed_out}
        for name, value in books.items():
            if not chips.bad and value != domain[name]:
                self._differ(TABLE, f"{name}: the domain counts {domain[name]}, the books {value}", None)
        return chips

    def _sum(self, cls: str) -> int:
        return sum(b for a, b in self.balances.items() if accounts.class_of(a) == cls)

    def _differ(self, check: str, what: str, hand: int | None, player: str | None = None) -> None:
        self.differences.append(Difference(check, what, self.table, hand, player, self._where, self.book.clock_ms))


def mismatch(booked: list[Entry], expected: list[Entry]) -> str:
    extra = [describe(e) for e in booked if e not in expected]
    lacking = [describe(e) for e in expected if e not in booked]
    parts = ([f"the books hold {'; '.join(extra)}"] if extra else []) + (
        [f"the stored event gives {'; '.join(lacking)}"] if lacking else [])
    return ", ".join(parts) or "the entries are booked in another order"
