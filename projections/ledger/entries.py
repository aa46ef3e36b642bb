"""Every chip movement of a table as double-entry bookings: stored event in, entries out.

Pure: :func:`table_entries` reads one event of a table's stream and the little it must
remember of the stream before it (:class:`TableBook`: who holds which seat, the hand
under way, the table's clock), and returns the event's entries.  Each entry moves
``amount`` chips from its ``credit`` account to its ``debit`` account (accounts.py), so
the entries of an event always sum to zero.  An event that moves no chip has none.

A table's events carry no time of their own; the table's clock is the service's clock
(``now_ms``) of the command that opened the latest turn, recovered from the turn's
deadline (``deadline_ms`` = ``now_ms`` + the table's timer for that kind of turn).
Entries are dated with it: a hand's chips at the time of its turns.  The floor's new
timers (``TableConfigured``) hold from the next hand, at once between hands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec
from studroom.domain.authority import Sender
from studroom.domain.config import TableConfig
from studroom.domain.events import (
    Acted,
    AntePosted,
    ChipsBought,
    HandCancelled,
    HandEnded,
    HandStarted,
    PlayerLeft,
    PlayerSatDown,
    PotAwarded,
    RoundEnded,
    TableConfigured,
    TableOpened,
    TurnStarted,
)
from studroom.domain.games import GAMES

from . import accounts

# kinds of entries
DEPOSIT: Final = "deposit"
WITHDRAWAL: Final = "withdrawal"
RESERVE: Final = "buy-in reserve"        # the cashier holds chips for a buy-in
BUY_IN: Final = "buy-in"                 # the table credits the seat (from transit)
REFUND_BUY_IN: Final = "buy-in refund"   # a refused buy-in goes back to the account
CREDIT: Final = "operator credit"        # a buy-in that did not come through the cashier
ANTE: Final = "ante"
RETURN: Final = "uncalled bet returned"
POT: Final = "pot"                       # the hand's chips form a pot
RAKE: Final = "rake"
AWARD: Final = "award"
AWARD_HIGH: Final = "award high"
AWARD_LOW: Final = "award low"
REFUND: Final = "cancelled hand refund"
CASH_OUT: Final = "cash-out"             # the seat's chips leave the table
CASH_OUT_CREDIT: Final = "cash-out credit"  # ... and reach the player's account
BETS: Final = {"bring_in": "bring-in", "complete": "complete", "bet": "bet", "call": "call", "raise": "raise"}

CASHIER: Final = Sender("service", "cashier").key    # a buy-in's command id starts "service.cashier#"


class Unbookable(ValueError):
    """An event the books cannot follow (a seat nobody holds, chips outside a hand):
    its stream is not what the table's rules write."""


class Entry(msgspec.Struct, frozen=True, array_like=True):
    """``amount`` chips from ``credit`` to ``debit``; ``table``, ``hand`` and ``player``
    say what it concerns, ``at_ms`` when (ms since the epoch; None: not known)."""

    kind: str
    debit: str
    credit: str
    amount: int
    table: str | None = None
    hand: int | None = None
    player: str | None = None
    at_ms: int | None = None


class TableBook(msgspec.Struct):
    """What the entries of a table's next event depend on, folded from its events so far."""

    seats: dict[int, str] = {}
    hand: int | None = None           # the hand under way
    hi_lo: bool = False
    timers: dict[str, int] = {}       # seconds a turn of each kind lasts
    next_timers: dict[str, int] = {}  # the floor's timers given during a hand: from the next one
    clock_ms: int | None = None


def table_entries(book: TableBook, table: str, event: Any) -> list[Entry]:
    """The entries of one event of ``table`` (updating ``book`` past it)."""
    handler = _HANDLERS.get(type(event))
    return [] if handler is None else handler(book, table, event)


def _entry(book: TableBook, table: str, kind: str, debit: str, credit: str, amount: int,
           player: str | None = None) -> Entry:
    return Entry(kind, debit, credit, amount, table, book.hand, player, book.clock_ms)


def _seat(book: TableBook, table: str, seat: int) -> tuple[str, str]:
    """The account of a seat and the player holding it."""
    name = book.seats.get(seat)
    if name is None:
        raise Unbookable(f"seat {seat} of {table} is not held")
    return accounts.seat(table, seat, name), name


def _hand(book: TableBook, table: str) -> int:
    """The number of the hand under way."""
    if book.hand is None:
        raise Unbookable(f"chips of {table} move outside a hand")
    return book.hand


def _timers(config: TableConfig) -> dict[str, int]:
    return {"ante": config.ante_seconds, "act": config.action_seconds, "show": config.showdown_seconds}


def _opened(book: TableBook, table: str, e: TableOpened) -> list[Entry]:
    c = e.config
    book.hi_lo = GAMES[c.game].hi_lo if c.game in GAMES else False
    book.timers = _timers(c)
    return []


def _configured(book: TableBook, table: str, e: TableConfigured) -> list[Entry]:
    if book.hand is None:
        book.timers, book.next_timers = _timers(e.config), {}
    else:
        book.next_timers = _timers(e.config)
    return []


def _hand_over(book: TableBook) -> None:
    """No hand under way: the floor's timers given during it hold from now on."""
    book.hand = None
    if book.next_timers:
        book.timers, book.next_timers = book.next_timers, {}


def _sat_down(book: TableBook, table: str, e: PlayerSatDown) -> list[Entry]:
    book.seats[e.seat] = e.player
    return []


def _bought(book: TableBook, table: str, e: ChipsBought) -> list[Entry]:
    account, name = _seat(book, table, e.seat)
    if e.command_id is not None and e.command_id.partition("#")[0] == CASHIER:
        return [_entry(book, table, BUY_IN, account, accounts.transit(name), e.amount, name)]
    return [_entry(book, table, CREDIT, account, accounts.world(), e.amount, name)]


def _left(book: TableBook, table: str, e: PlayerLeft) -> list[Entry]:
    account, name = _seat(book, table, e.seat)
    del book.seats[e.seat]
    if not e.cashed_out:
        return []
    return [_entry(book, table, CASH_OUT, accounts.transit(name), account, e.cashed_out, name)]


def _hand_started(book: TableBook, table: str, e: HandStarted) -> list[Entry]:
    book.hand = e.hand_no
    return []


def _into_hand(book: TableBook, table: str, kind: str, seat: int, amount: int) -> list[Entry]:
    if not amount:
        return []
    account, name = _seat(book, table, seat)
    return [_entry(book, table, kind, accounts.hand(table, _hand(book, table)), account, amount, name)]


def _ante(book: TableBook, table: str, e: AntePosted) -> list[Entry]:
    return _into_hand(book, table, ANTE, e.seat, e.amount)


def _acted(book: TableBook, table: str, e: Acted) -> list[Entry]:
    return _into_hand(book, table, BETS.get(e.action, e.action), e.seat, e.amount)


def _out_of_hand(book: TableBook, table: str, kind: str, seat: int, amount: int) -> list[Entry]:
    if not amount:
        return []
    account, name = _seat(book, table, seat)
    return [_entry(book, table, kind, account, accounts.hand(table, _hand(book, table)), amount, name)]


def _round_ended(book: TableBook, table: str, e: RoundEnded) -> list[Entry]:
    if e.returned_seat is None:
        return []
    return _out_of_hand(book, table, RETURN, e.returned_seat, e.returned)


def _pot_awarded(book: TableBook, table: str, e: PotAwarded) -> list[Entry]:
    hand_no = _hand(book, table)
    pot = accounts.pot(table, hand_no, e.pot)
    out = [_entry(book, table, POT, pot, accounts.hand(table, hand_no), e.amount)]
    if e.rake:
        out.append(_entry(book, table, RAKE, accounts.rake(table), pot, e.rake))
    halves = ((AWARD_HIGH, e.high), (AWARD_LOW, e.low)) if book.hi_lo else ((AWARD, e.high),)
    for kind, shares in halves:
        for seat, chips in sorted(shares.items()):
            if chips:
                account, name = _seat(book, table, seat)
                out.append(_entry(book, table, kind, account, pot, chips, name))
    return out


def _cancelled(book: TableBook, table: str, e: HandCancelled) -> list[Entry]:
    out = [entry for seat, chips in sorted(e.refunds.items())
           for entry in _out_of_hand(book, table, REFUND, seat, chips)]
    _hand_over(book)
    return out


def _hand_ended(book: TableBook, table: str, e: HandEnded) -> list[Entry]:
    _hand_over(book)
    return []


def _turn(book: TableBook, table: str, e: TurnStarted) -> list[Entry]:
    book.clock_ms = e.deadline_ms - 1000 * book.timers.get(e.kind, 0)
    return []


_HANDLERS: Final[dict[type, Callable[[TableBook, str, Any], list[Entry]]]] = {
    TableOpened: _opened, PlayerSatDown: _sat_down, ChipsBought: _bought, PlayerLeft: _left,
    HandStarted: _hand_started, AntePosted: _ante, Acted: _acted, RoundEnded: _round_ended,
    PotAwarded: _pot_awarded, HandCancelled: _cancelled, HandEnded: _hand_ended, TurnStarted: _turn,
    TableConfigured: _configured,
}
