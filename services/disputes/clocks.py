"""The clock (``now_ms``) of a stored command, read back from the record.

Events carry no time, but some carry the clock of the command that made them, and
the re-run must give that command the same clock to make the same events:

- a ``TurnStarted`` (its deadline minus the table's timer for that kind of turn:
  domain/hands.turn_clock), a ``PauseStarted`` (its deadline minus its length), and a
  player's own or an operator's ``SitOutChanged`` (``since_ms``, R34) give it exactly;
- a ``SeatOffered`` (its ``until_ms`` less the table's offer time) gives it exactly;
- a command that ends a hand or a pause removes every seat sat out past the table's
  limit (R34): it was at or after the limit of each seat it removed, and before the
  limit of each seat it left sat out; likewise it ends an open seat offer of the
  waiting list that has passed, and keeps one that has not;
- a sender's command id is at most his clock in microseconds plus
  ``command_ids.AHEAD_US``, so the id bounds the clock from below.

A command whose own events give no clock takes the next clock the record shows (a
later command's, so no earlier than its own), kept within those bounds.  Every other
command depends on no clock: any clock the bounds allow makes its events.
"""

from __future__ import annotations

from collections.abc import Sequence

from studroom.domain.command_ids import AHEAD_US
from studroom.domain.events import (
    Event,
    HandCancelled,
    HandEnded,
    HandStarted,
    LeaveRequested,
    PauseEnded,
    PauseStarted,
    PlayerLeft,
    PlayerSatDown,
    SeatOffered,
    SitOutChanged,
    TableClosed,
    TableConfigured,
    TurnStarted,
    WaitingListLeft,
)
from studroom.domain.config import TableConfig
from studroom.domain.hands import turn_clock
from studroom.domain.table import Table

_HAND_ENDS = (HandEnded, HandCancelled)


class _Settings:
    """The settings in force as the record is read on from ``table``: an operator's
    change during a hand takes effect when the hand ends (as domain/table.py applies it)."""

    __slots__ = ("config", "in_hand", "pending")

    def __init__(self, table: Table) -> None:
        self.config, self.pending, self.in_hand = table.config, table.next_config, table.hand is not None

    def see(self, kind: type, event: Event) -> None:
        if kind is TableConfigured:
            if self.in_hand:
                self.pending = event.config  # type: ignore[attr-defined]
            else:
                self.config = event.config  # type: ignore[attr-defined]
        elif kind is HandStarted:
            self.in_hand = True
        elif kind in _HAND_ENDS:
            self.in_hand, self.config, self.pending = False, self.pending or self.config, None


def clock_at(stream: Sequence[Event], index: int, table: Table, number: str | None) -> int:
    """``now_ms`` of the command whose events begin at ``stream[index]``, given to the
    table as the record leaves it before them (``table``); ``number``: the sender's
    command id, if any."""
    first = stream[index]
    exact = stated_clock(first)
    if exact is not None:
        return exact
    low, high = _removal_bounds(stream, index, table)
    clock = max(_next_clock(stream, index, table), low, _id_floor(number))
    return clock if high is None else min(clock, high)


def stated_clock(event: Event) -> int | None:
    """The clock of the command an event states, if it does (a pause, a sit-out not
    made by a timeout: always the first event of its command)."""
    if type(event) is PauseStarted:
        return event.deadline_ms - event.pause_ms
    if type(event) is SitOutChanged and event.sitting_out and event.reason != "timed_out":
        return event.since_ms
    return None


def _next_clock(stream: Sequence[Event], index: int, table: Table) -> int:
    """The first clock the record shows from ``index`` on (0: none), read under the
    settings in force where it shows it (the floor's new settings hold from the next
    hand, at once between hands: domain/table.py)."""
    settings = _Settings(table)
    assert settings.config is not None
    for i in range(index, len(stream)):             # by index: a slice would copy the rest of the stream
        event = stream[i]
        kind = type(event)
        if kind is TurnStarted:
            return turn_clock(event, settings.config)  # type: ignore[arg-type]
        if kind is SeatOffered:
            return event.until_ms - 1000 * settings.config.seat_offer_seconds  # type: ignore[attr-defined]
        stated = stated_clock(event)
        if stated is not None:
            return stated
        settings.see(kind, event)
    return 0


def _removal_bounds(stream: Sequence[Event], index: int, table: Table) -> tuple[int, int | None]:
    """R34 (domain/table.py ``_remove_absent``): the clock a command ending a hand or a
    pause had, as its removals show it: at least the limit of every seat it removed,
    below the limit of every seat it left sat out (None: no bound).  The waiting list
    is served there too: an open offer that passed bounds it from below, one still
    open from above."""
    end = _removal_point(stream, index)
    if end is None or not _anyone_waits(stream[index:end + 1], table):
        return 0, None
    config, sat_out, offer = _at_end(stream, index, end, table)
    limit = 1000 * config.sit_out_seconds
    until = {seat: since + limit for seat, since in sat_out.items()}
    departures = _departures(stream, end + 1)
    removed = {e.seat for e in departures if e.reason == "sat_out_too_long"}
    low = max((until[seat] for seat in removed if seat in until), default=0)
    high = min((u for seat, u in until.items() if seat not in removed), default=None)
    after = stream[end + 1 + len(departures)] if end + 1 + len(departures) < len(stream) else None
    if offer is not None and type(after) is not TableClosed:    # the waiting list was served
        if type(after) is WaitingListLeft and after.reason == "offer_passed":  # type: ignore[attr-defined]
            low = max(low, offer.until_ms)
        else:
            high = offer.until_ms if high is None else min(high, offer.until_ms)
    return low, None if high is None else high - 1


def _at_end(stream: Sequence[Event], index: int, end: int,
            table: Table) -> tuple[TableConfig, dict[int, int], SeatOffered | None]:
    """What R34 and the waiting list see where the record ends a hand or a pause (its
    place ``end``): the settings in force, each seat sat out and not leaving with when
    since, the open seat offer.  Followed from ``table`` through the few events that
    change them (as domain/table.py applies them): a copy of the whole table, brought
    there, cost a sixth of verify."""
    settings, offer = _Settings(table), table.offer
    seats = {seat: [state.sitting_out, state.out_since_ms, state.leaving] for seat, state in table.seats.items()}
    for i in range(index, end + 1):
        event, kind = stream[i], type(stream[i])
        if kind is SitOutChanged and event.seat in seats:  # type: ignore[attr-defined]
            seats[event.seat][:2] = [event.sitting_out, event.since_ms]  # type: ignore[attr-defined]
        elif kind is LeaveRequested and event.seat in seats:  # type: ignore[attr-defined]
            seats[event.seat][2] = True  # type: ignore[attr-defined]
        elif kind is PlayerSatDown:
            seats[event.seat] = [False, 0, False]  # type: ignore[attr-defined]
        elif kind is PlayerLeft:
            seats.pop(event.seat, None)  # type: ignore[attr-defined]
        elif kind is SeatOffered:
            offer = event  # type: ignore[assignment]
        elif kind is WaitingListLeft and offer is not None and offer.player == event.player:  # type: ignore[attr-defined]
            offer = None
        else:
            settings.see(kind, event)
    assert settings.config is not None
    return settings.config, {seat: since for seat, (out, since, leaving) in seats.items() if out and not leaving}, offer


def _anyone_waits(events: Sequence[Event], table: Table) -> bool:
    """Does a seat sit out or a seat offer wait there?  Else the end of a hand or a
    pause removes no one and serves no offer, whatever the clock (and the table need
    not be copied: most hands)."""
    return (table.offer is not None or any(state.sitting_out for state in table.seats.values())
            or any(type(e) is SitOutChanged or type(e) is SeatOffered for e in events))


def _removal_point(stream: Sequence[Event], index: int) -> int | None:
    """Where the record ends a hand, or where the command at ``index`` is the timer's
    end of a pause, before any turn, pause or hand starts (None: nowhere)."""
    if type(stream[index]) is PauseEnded:
        return index
    for i in range(index, len(stream)):
        kind = type(stream[i])
        if kind in _HAND_ENDS:
            return i
        if kind in (TurnStarted, PauseStarted, HandStarted):
            return None
    return None


def _departures(stream: Sequence[Event], start: int) -> list[PlayerLeft]:
    """The ``PlayerLeft`` events that follow a hand's or a pause's end."""
    end = start
    while end < len(stream) and type(stream[end]) is PlayerLeft:
        end += 1
    return stream[start:end]  # type: ignore[return-value]


def _id_floor(number: str | None) -> int:
    """The earliest clock at which a sender's command id ``number`` is accepted."""
    if number is None or not number.isdecimal():
        return 0
    return max(0, -(-(int(number) - AHEAD_US) // 1000))
