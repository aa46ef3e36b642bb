"""A table's stored stream cut into hands, and when each hand was played.

Pure: the player histories, the hand-history exports and the dispute replay all read a
table's events (the dealer's record) hand by hand with these functions.

A hand runs from its ``HandStarted`` to its ``HandEnded``.  A hand cancelled for want
of antes (R5) ends with ``HandCancelled`` and keeps its number: the next hand started
at that table carries the same ``hand_no`` (the table counts played hands only).  So a
table's hands are numbered from 1, and "hand N" is the hand that ended with
``HandEnded(hand_no=N)``; a cancelled attempt is reached only when no played hand of
that number exists (yet).

Events carry no time of their own.  The table's clock is the service's clock
(``now_ms``) of the command that opened a turn, and every ``TurnStarted`` gives it back:
its ``deadline_ms`` is that clock plus the table's timer for that kind of turn.

Rules R5, R18 (docs/rules.md).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

import msgspec

from .config import TableConfig
from .events import Event, HandCancelled, HandEnded, HandStarted, TableConfigured, TableOpened, TurnStarted


class HandSpan(msgspec.Struct, frozen=True):
    """Where one hand lies in its table's stream: ``events[start:end]`` (``end`` is one
    past its ``HandEnded`` or ``HandCancelled``; None while the hand is under way)."""

    hand_no: int
    start: int
    end: int | None
    cancelled: bool = False

    @property
    def finished(self) -> bool:
        return self.end is not None


def spans(events: Sequence[Event]) -> list[HandSpan]:
    """Every hand of a table's stream, cancelled attempts included, in order."""
    found: list[HandSpan] = []
    start: int | None = None
    for i, event in enumerate(events):
        kind = type(event)
        if kind is HandStarted:
            start = i
        elif kind is HandEnded or kind is HandCancelled:
            if start is not None:
                found.append(HandSpan(event.hand_no, start, i + 1, kind is HandCancelled))  # type: ignore[attr-defined]
            start = None
    if start is not None:
        found.append(HandSpan(events[start].hand_no, start, None))  # type: ignore[attr-defined]
    return found


class NoSuchHand(LookupError):
    """The table has no hand of that number."""


def find(events: Sequence[Event], hand_no: int) -> HandSpan:
    """Hand ``hand_no``: the one played to its end under that number, else its last
    (cancelled or running) attempt."""
    attempts = [s for s in spans(events) if s.hand_no == hand_no]
    if not attempts:
        played = max((s.hand_no for s in spans(events) if not s.cancelled and s.finished), default=0)
        raise NoSuchHand(f"no hand {hand_no} at this table (hands played: 1..{played})" if played
                         else f"no hand {hand_no}: no hand has been played at this table")
    return next((s for s in attempts if s.finished and not s.cancelled), attempts[-1])


def config_of(events: Sequence[Event]) -> TableConfig:
    """The table's settings (its first event opened it)."""
    opened = events[0] if events else None
    if not isinstance(opened, TableOpened):
        raise TypeError("a table's stream begins with TableOpened")
    return opened.config


class ConfigTimeline:
    """The table's settings as they changed along its stream: the opening ones, then each
    operator's ``TableConfigured`` (which takes effect at the next hand: a hand runs on
    the settings stored before its first event)."""

    def __init__(self, stream: Sequence[Event]) -> None:
        self.positions = [0]
        self.configs = [config_of(stream)]
        for position, event in enumerate(stream):
            if type(event) is TableConfigured:
                self.positions.append(position)
                self.configs.append(event.config)  # type: ignore[attr-defined]

    def at(self, index: int) -> TableConfig:
        """The settings of a hand whose first event is at ``index``."""
        return self.configs[max(bisect_left(self.positions, index) - 1, 0)]


def turn_clock(turn: TurnStarted, config: TableConfig) -> int:
    """The service's clock (ms since the epoch) when ``turn`` was opened."""
    seconds = {"ante": config.ante_seconds, "act": config.action_seconds, "show": config.showdown_seconds}
    return turn.deadline_ms - 1000 * seconds[turn.kind]


def started_ms(events: Sequence[Event], config: TableConfig) -> int | None:
    """When a hand (its events) was played: the clock of its first turn; None if no turn
    was ever opened (every player all-in from the antes, or a cancelled hand)."""
    first = next((e for e in events if type(e) is TurnStarted), None)
    return None if first is None else turn_clock(first, config)  # type: ignore[arg-type]
