"""A table's own events into its lobby entry: opened, configured, the operators' states
(paused, closing, closed), who sits where.  Pure, as :mod:`.projection`, which folds
these with the hand's events.

The floor's events (issue 18): ``TableConfigured`` (stakes and the rest from the next
hand on, as the table takes them), ``TablePaused`` / ``TableResumed``, ``TableClosing``
(an operator closed the table mid-hand) and ``TableClosed``; a player sat out (R34) or
removed comes as ``SitOutChanged`` or ``PlayerLeft``, as for anyone.  The waiting list
counts who joined (``WaitingListJoined``) less who left it (``WaitingListLeft``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from studroom.domain.config import TableConfig
from studroom.domain.events import (
    ChipsBought,
    Event,
    LeaveRequested,
    PlayerLeft,
    PlayerSatDown,
    SitOutChanged,
    TableClosed,
    TableClosing,
    TableConfigured,
    TableOpened,
    TablePaused,
    TableResumed,
    WaitingListJoined,
    WaitingListLeft,
)

from .entry import (
    CLOSED,
    CLOSING,
    LEFT,
    OPEN,
    PAUSED,
    LobbyEntry,
    SeatRow,
    in_hand,
    seat_row,
)


def opened(e: TableOpened) -> LobbyEntry:
    c = e.config
    return LobbyEntry(table_id=e.table_id, game=c.game, stakes=c.stakes, seats=c.seats, max_players=c.max_players,
                      min_buy_in=c.min_buy_in, max_buy_in=c.buy_in_ceiling)


def take_config(entry: LobbyEntry, c: TableConfig) -> None:
    entry.game, entry.stakes, entry.seats, entry.max_players = c.game, c.stakes, c.seats, c.max_players
    entry.min_buy_in, entry.max_buy_in, entry.configured = c.min_buy_in, c.buy_in_ceiling, None


def configured(entry: LobbyEntry, e: TableConfigured, at_ms: int) -> None:
    """New settings (``TableConfigured``): at once between hands, else from the next hand
    on, as the table takes them."""
    if entry.running:
        entry.configured = e.config
    else:
        take_config(entry, e.config)


def state_change(state: str) -> Callable[[LobbyEntry, Any, int], None]:
    """An operator's event that puts the table in ``state``; a closing table stays
    closing until closed, whatever else comes."""
    def change(entry: LobbyEntry, e: Any, at_ms: int) -> None:
        if entry.state not in (CLOSING, CLOSED) or state == CLOSED:
            entry.state = state
    return change


def sat_down(entry: LobbyEntry, e: PlayerSatDown, at_ms: int) -> None:
    entry.players.append(SeatRow(e.seat, e.player))
    entry.players.sort(key=lambda row: row.seat)


def bought(entry: LobbyEntry, e: ChipsBought, at_ms: int) -> None:
    row = seat_row(entry, e.seat)
    if row is not None:
        row.stack += e.amount


def sit_out_changed(entry: LobbyEntry, e: SitOutChanged, at_ms: int) -> None:
    row = seat_row(entry, e.seat)
    if row is not None:
        row.sitting_out = e.sitting_out


def left(entry: LobbyEntry, e: PlayerLeft, at_ms: int) -> None:
    entry.players = [row for row in entry.players if row.seat != e.seat]


def leave_requested(entry: LobbyEntry, e: LeaveRequested, at_ms: int) -> None:
    """He leaves when the hand ends; his hand is folded unless it is all-in or shown down."""
    row = seat_row(entry, e.seat)
    if row is not None:
        row.leaving = True
    hand = entry.hand
    p = in_hand(entry, e.seat)
    if p is not None and hand is not None:
        p.action, p.amount = LEFT, 0
        if not p.all_in and not hand.showdown:
            p.folded = True
            if hand.turn is not None and hand.turn.seat == e.seat:
                hand.turn = None


def waiting_joined(entry: LobbyEntry, e: WaitingListJoined, at_ms: int) -> None:
    entry.waiting += 1


def waiting_left(entry: LobbyEntry, e: WaitingListLeft, at_ms: int) -> None:
    entry.waiting = max(0, entry.waiting - 1)


TABLE_EVENTS: Final[dict[type[Event], Callable[[LobbyEntry, Any, int], None]]] = {
    PlayerSatDown: sat_down, ChipsBought: bought, SitOutChanged: sit_out_changed, PlayerLeft: left,
    LeaveRequested: leave_requested, TableConfigured: configured, TablePaused: state_change(PAUSED),
    TableResumed: state_change(OPEN), TableClosing: state_change(CLOSING), TableClosed: state_change(CLOSED),
    WaitingListJoined: waiting_joined, WaitingListLeft: waiting_left,
}
