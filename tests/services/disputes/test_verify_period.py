"""``studroom verify``'s logic: a period of days (UTC, both ends included), the hands
played in it, and a summary that names every hand that does not replay."""

from __future__ import annotations

import argparse

import msgspec
import pytest
from studroom.domain.events import Acted
from studroom.domain.hands import config_of, spans, started_ms
from studroom.domain.simulate import START_MS, SimulatedTable
from studroom.services.disputes.verify import (
    Period,
    hands_in,
    summarize,
    verify,
)
from studroom.services.runtime.arguments import day, day_or_instant, first_ms, last_ms

DAY_MS = 86_400_000


def test_periods_are_days_or_instants_in_utc() -> None:
    assert first_ms(day("2025-12-01")) == 1_764_547_200_000
    assert last_ms(day("2025-12-01")) == 1_764_547_200_000 + DAY_MS - 1
    assert first_ms(day_or_instant("2025-12-01T15:00:00")) == 1_764_601_200_000
    assert last_ms(day_or_instant("2025-12-01T16:00:00+01:00")) == 1_764_601_200_000
    with pytest.raises(argparse.ArgumentTypeError, match="not a day"):
        day_or_instant("yesterday")
    period = Period(10, 20)
    assert period.holds(10) and period.holds(20) and not period.holds(21) and not period.holds(None)
    assert Period().holds(None)


def test_the_hands_of_a_period_and_the_summary() -> None:
    tables = [(f"t{i}", SimulatedTable(f"t{i}", "seven_card_stud_hilo", 5, seed=i).play(15)) for i in (1, 2)]
    _, events = tables[0]
    config = config_of(events)
    finished = [s for s in spans(events) if s.end]
    times = [started_ms(events[s.start:s.end], config) for s in finished]
    middle = times[len(times) // 2]
    assert hands_in(events, Period(middle, None)) == [s for s, t in zip(finished, times) if t is not None and t >= middle]
    assert hands_in(events, Period(first_ms(day("2025-12-01")), last_ms(day("2025-12-01")))) == finished
    assert hands_in(events, Period(START_MS + 10 * DAY_MS, None)) == []

    told: list[int] = []
    clean = summarize(verify(tables, Period(), on_progress=told.append))
    assert sum(told) == sum(len(e) for _, e in tables) and min(told) >= 0   # every event, once
    assert clean.tables == 2 and clean.hands == sum(len([s for s in spans(e) if s.end]) for _, e in tables)
    assert clean.different == []

    tampered = list(tables[1][1])
    i = next(i for i, e in enumerate(tampered) if isinstance(e, Acted) and e.amount)
    tampered[i] = msgspec.structs.replace(tampered[i], amount=tampered[i].amount * 2)  # type: ignore[attr-defined]
    summary = summarize(verify([tables[0], ("t2", tampered)], Period()))
    (different,) = summary.different
    assert different.table_id == "t2" and different.difference is not None and different.difference.index == i
    assert summary.hands == clean.hands
