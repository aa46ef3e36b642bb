"""One hand on the record as a reader may see it, with what it takes to tell it.

A :class:`HandRecord` is what a player's history keeps of a hand, what the exports
(text, PHH) read, and what a history request returns: the table's settings, who sat
where when the hand began, and the hand's events as the reader may see them
(``seen.py``), or the dealer's full record for the room's own use (disputes).

Rules R23, R33 (docs/rules.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from .config import TableConfig
from .events import Event, HandStarted, PlayerLeft, PlayerSatDown, TableEvent
from .hands import ConfigTimeline, HandSpan, started_ms
from .seen import seen_by


class HandRecord(msgspec.Struct, frozen=True, kw_only=True):
    table_id: str
    hand_no: int
    config: TableConfig
    seated: dict[int, str]          # who sat where when the hand began (dealt in or not)
    events: list[TableEvent]        # HandStarted .. HandEnded, as the reader may see them
    viewer: int | None = None       # the reader's seat (None: anyone, or the full record)
    full: bool = False              # the dealer's full record (every card), not a player's copy
    started_ms: int | None = None   # when it was played (hands.started_ms)


class NotInHand(LookupError):
    """The player was not dealt into that hand."""


def seated_before(stream: Sequence[Event], index: int) -> dict[int, str]:
    """Who sat where just before ``stream[index]``."""
    seated: dict[int, str] = {}
    for event in stream[:index]:
        if type(event) is PlayerSatDown:
            seated[event.seat] = event.player  # type: ignore[attr-defined]
        elif type(event) is PlayerLeft:
            seated.pop(event.seat, None)  # type: ignore[attr-defined]
    return seated


def seat_of(events: Sequence[Event], player: str) -> int | None:
    """The seat ``player`` was dealt in at, in a hand's events (None: not dealt in)."""
    started = events[0] if events else None
    if not isinstance(started, HandStarted):
        raise TypeError("a hand's events begin with HandStarted")
    return next((s.seat for s in started.seats if s.player == player), None)


def make_record(table_id: str, config: TableConfig, seated: dict[int, str], hand: Sequence[Event],
                viewer: int | None, *, full: bool = False, public: Sequence[Event] | None = None) -> HandRecord:
    """The record of a hand's dealer events ``hand``: as the player in ``viewer`` may
    see it, the public copy (viewer None), or with ``full`` every card (``public``:
    the hand's public copies, if made already)."""
    events = list(hand) if full else seen_by(hand, viewer, public)
    return HandRecord(table_id=table_id, hand_no=hand[0].hand_no, config=config,  # type: ignore[attr-defined]
                      seated=seated, events=events, viewer=viewer, full=full,  # type: ignore[arg-type]
                      started_ms=started_ms(hand, config))


def record_from_stream(stream: Sequence[Event], span: HandSpan, as_player: str | None) -> HandRecord:
    """Hand ``span`` of a table's whole stream: as ``as_player`` may see it, or (None)
    the dealer's full record.  NotInHand when he was not dealt in."""
    hand = stream[span.start:span.end]
    config = ConfigTimeline(stream).at(span.start)        # as the operator had set it for this hand
    table_id = stream[0].table_id  # type: ignore[attr-defined]
    seated = seated_before(stream, span.start)
    if as_player is None:
        return make_record(table_id, config, seated, hand, None, full=True)
    seat = seat_of(hand, as_player)
    if seat is None:
        raise NotInHand(f"{as_player} was not dealt into hand {span.hand_no} at {table_id}")
    return make_record(table_id, config, seated, hand, seat)
