"""``studroom verify``: every finished hand of a period, checked (checks.py).

A hand's time is the clock of its first turn (domain/hands.py); a hand
that opened no turn (every player all-in from the antes) takes the time of the hand
before it.  Periods are days or instants in UTC, both ends included.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, time, timedelta

import msgspec
from studroom.domain.events import Event
from studroom.domain.hands import HandSpan, config_of, spans, started_ms

from .checks import HandCheck, check_table


class Period(msgspec.Struct, frozen=True):
    """From ``start_ms`` to ``end_ms`` (ms since the epoch), both included; None: open."""

    start_ms: int | None = None
    end_ms: int | None = None

    def holds(self, ms: int | None) -> bool:
        if ms is None:
            return self.start_ms is None and self.end_ms is None
        return (self.start_ms is None or ms >= self.start_ms) and (self.end_ms is None or ms <= self.end_ms)


def parse_when(text: str, end: bool = False) -> int:
    """``2026-12-01`` (a whole day: its first or, with ``end``, its last millisecond) or
    an ISO date and time (UTC unless it says otherwise), as ms since the epoch."""
    try:
        if len(text) == 10:
            day = datetime.strptime(text, "%Y-%m-%d").date()
            moment = datetime.combine(day, time.min, UTC) + (timedelta(days=1, milliseconds=-1) if end else timedelta())
        else:
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{text!r} is no date (YYYY-MM-DD) or ISO date and time") from None
    return int(moment.timestamp() * 1000)


def hands_in(stream: Sequence[Event], period: Period) -> list[HandSpan]:
    """The finished hands (cancelled attempts included) of a table played in ``period``."""
    config = config_of(stream)
    chosen: list[HandSpan] = []
    last_ms: int | None = None
    for span in spans(stream):
        if span.end is None:
            continue
        when = started_ms(stream[span.start:span.end], config)
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


def verify(streams: Iterable[tuple[str, list[Event]]], period: Period) -> Iterator[HandCheck]:
    """Every finished hand of ``period`` at every table, checked."""
    for _table_id, stream in streams:
        if stream:
            yield from check_table(stream, hands_in(stream, period))


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
