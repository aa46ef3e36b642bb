"""``studroom verify``: every finished hand of a period, checked (checks.py).

A hand's time is the clock of its first turn (domain/hands.py); a hand
that opened no turn (every player all-in from the antes) takes the time of the hand
before it.  Periods are days or instants in UTC, both ends included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import msgspec
from studroom.domain.events import Event
from studroom.domain.hands import ConfigTimeline, HandSpan, spans, started_ms

from .checks import HandCheck, check_table
from .marks import Mark, digest


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


class TableVerdict(msgspec.Struct):
    """One table's hands checked: how many, those that differ, and how far the table
    is now verified through (None: no further than before)."""

    table_id: str
    events: int
    hands: int = 0
    cancelled: int = 0
    skipped: int = 0                      # hands before the table's mark, not checked again
    different: list[HandCheck] = []
    mark: Mark | None = None


def verify_table(table_id: str, stream: Sequence[Event], period: Period, mark: Mark | None = None) -> TableVerdict:
    """The finished hands of ``period`` at one table, checked in order in one re-run;
    those before ``mark`` are skipped while the events up to it are unchanged.  Only a
    run over every period moves the mark: to the end of the last hand checked before
    the first that differs."""
    verdict = TableVerdict(table_id, len(stream))
    if not stream:
        return verdict
    hands = hands_in(stream, period)
    since = mark.version if mark is not None and mark.version <= len(stream) \
        and digest(stream[:mark.version]) == mark.digest else 0
    checked = [span for span in hands if span.start >= since]
    verdict.skipped = len(hands) - len(checked)
    through = since
    for check in check_table(stream, checked, since or None):
        verdict.hands += 1
        verdict.cancelled += check.span.cancelled
        if not check.consistent:
            verdict.different.append(check)
        elif not verdict.different:
            through = check.span.end or through
    if period == Period() and through > since:
        verdict.mark = Mark(through, digest(stream[:through]))
    return verdict


class Summary(msgspec.Struct):
    tables: int = 0
    hands: int = 0
    cancelled: int = 0
    skipped: int = 0
    different: list[HandCheck] = []
    marks: dict[str, Mark] = {}


def verify(streams: Iterable[tuple[str, list[Event]]], period: Period, *, marks: Mapping[str, Mark] | None = None,
           on_progress: Callable[[int], None] | None = None) -> Iterator[TableVerdict]:
    """Every table's verdict (:func:`verify_table`); ``on_progress`` is told each
    table's events when it is done."""
    tell = on_progress or _nobody
    for table_id, stream in streams:
        verdict = verify_table(table_id, stream, period, (marks or {}).get(table_id))
        tell(len(stream))
        yield verdict


def _nobody(_events: int) -> None:
    """Progress that no one follows."""


def summarize(verdicts: Iterable[TableVerdict]) -> Summary:
    """The tables' verdicts added up (tables: those with a hand checked)."""
    summary = Summary()
    for verdict in verdicts:
        summary.tables += verdict.hands > 0
        summary.hands += verdict.hands
        summary.cancelled += verdict.cancelled
        summary.skipped += verdict.skipped
        summary.different += verdict.different
        if verdict.mark is not None:
            summary.marks[verdict.table_id] = verdict.mark
    summary.different.sort(key=lambda check: (check.table_id, check.span.hand_no))
    return summary
