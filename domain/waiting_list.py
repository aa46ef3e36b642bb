"""A table's waiting list: who waits for a seat, and the seat offered to the first.

The table (domain/table.py) holds the list (names, in the order they joined) and the
one open offer (its ``SeatOffered``, or None), and emits the events; the rules are
here:

* a player joins as himself, once, and not while he sits at the table;
* while an offer is open, only its player may sit down, and only in the offered seat;
  while anyone waits, a free seat is kept for the list (nobody else sits down);
* one offer at a time, to the first waiting player, for the lowest free seat; it
  passes at ``until_ms`` (he leaves the list, ``offer_passed``) and the next is offered.

The table has no clock: an offer's end is checked when a hand ends and when a pause
ends (the one timer per table, docs/design/timer.md).  See docs/rules.md, "The
waiting list".
"""

from __future__ import annotations

from collections.abc import Collection

from .errors import ALREADY_SEATED, ALREADY_WAITING, NOT_WAITING, SEAT_OFFERED, DomainError, quoted
from .events import SeatOffered


def check_join(waiting: list[str], seated: Collection[str], player: str) -> None:
    """Refuse a player who sits at the table or waits already."""
    if player in seated:
        raise DomainError(ALREADY_SEATED, f"player {quoted(player)} already sits at this table")
    if player in waiting:
        raise DomainError(ALREADY_WAITING, f"player {quoted(player)} is on the waiting list already")


def check_leave(waiting: list[str], player: str) -> None:
    if player not in waiting:
        raise DomainError(NOT_WAITING, f"player {quoted(player)} is not on the waiting list")


def check_sit_down(waiting: list[str], offer: SeatOffered | None, player: str, seat: int) -> None:
    """Refuse a seat kept for the list: the offered one to anyone but its player, any
    other while someone waits (he joins the list)."""
    if offer is not None and offer.player == player and offer.seat == seat:
        return
    if offer is not None and offer.seat == seat:
        raise DomainError(SEAT_OFFERED, f"seat {seat} is offered to {quoted(offer.player)} until {offer.until_ms}")
    if offer is not None and offer.player == player:
        raise DomainError(SEAT_OFFERED, f"seat {offer.seat} is the one offered to {quoted(player)}")
    if waiting:
        raise DomainError(SEAT_OFFERED, f"{len(waiting)} players wait for a seat here: join the waiting list")


def free_seat(taken: Collection[int], seat_count: int, max_players: int) -> int | None:
    """The lowest seat nobody holds, None when the table is full (R2 caps the players)."""
    if len(taken) >= max_players:
        return None
    return next((seat for seat in range(seat_count) if seat not in taken), None)


def next_offer(waiting: list[str], offer: SeatOffered | None, seat: int | None) -> str | None:
    """The player to offer ``seat`` (a free seat, or None) to now: the first waiting,
    when no offer is open."""
    if offer is not None or seat is None or not waiting:
        return None
    return waiting[0]


def passed(offer: SeatOffered | None, now_ms: int) -> bool:
    """Has the open offer passed unanswered at ``now_ms``?"""
    return offer is not None and offer.until_ms <= now_ms
