"""``studroom verify``: every finished hand of a period, checked (checks.py).

A hand's time is the clock of its first turn (domain/hands.py); a hand
that opened no turn (every player all-in from the antes) takes the time of the hand
before it.  Periods are days or instants in UTC, both ends included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import msgspec
from studroom.domain.events import Event
from studroom.domain.hands import ConfigTimeline, HandSpan, spans, started_ms

from .checks import HandCheck, check_table


class Period(msgspec.Struct, frozen=True):
    """From ``start_ms`` to ``end_ms`` (ms since the epoch), both included; None: open."""

    start_ms: int | None = None
    end_ms: int | None = None

    def holds(self, ms: int | None) -> bool:
        if ms is None:
            return self.start_ms is None and self.end_ms is None
        return (self.start_ms is None or ms >= self.start_ms) and (self.end_ms is None or ms <= self.end_ms)


def hands_in(stream: Sequence[Event], period: Period) -> list[HandSpan]:
    """The finished hands (cancelled attempts included) of a table played in ``period``."""
    configs = ConfigTimeline(stream)
    chosen: list[HandSpan] = []
    last_ms: int | None = None
    for span in spans(stream):
        if span.end is None:
            continue
        when = started_ms(stream[span.start:span.end], configs.at(span.start))   # its own timers
        when = last_ms if when is None else when
        last_ms = when
        if period.holds(when):
            chosen.append(span)
    return chosen


class Summary(msgspec.Struct):
    tables: int = 0
    hands: int = 0
    cancelled: int = 0
    different: list[HandCheck] = []


def verify(streams: Iterable[tuple[str, list[Event]]], period: Period, *,
           on_progress: Callable[[int], None] | None = None) -> Iterator[HandCheck]:
    """Every finished hand of ``period`` at every table, checked; ``on_progress`` is
    told how many more of a table's events are gone through (after each hand and at
    the table's end: the tables' events in all)."""
    tell = on_progress or _nobody
    for _table_id, stream in streams:
        gone = 0
        for check in check_table(stream, hands_in(stream, period)) if stream else ():
            yield check
            end = check.span.end or gone            # a checked hand is finished: its end is set
            tell(end - gone)
            gone = end
        tell(len(stream) - gone)


def _nobody(_events: int) -> None:
    """Progress that no one follows."""


def summarize(checks: Iterable[HandCheck]) -> Summary:
    summary = Summary()
    tables: set[str] = set()
    for check in checks:
        tables.add(check.table_id)
        summary.hands += 1
        summary.cancelled += check.span.cancelled
        if not check.consistent:
            summary.different.append(check)
    summary.tables = len(tables)
    return summary
