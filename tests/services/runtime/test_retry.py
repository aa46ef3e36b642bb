"""The room's one retry policy: pauses that double from ``first`` up to ``longest``,
each drawn between half of its ceiling and all of it (equal jitter)."""

from __future__ import annotations

import itertools
import random

from studroom.services.runtime.retry import REQUEST, Backoff


def test_the_ceilings_double_up_to_the_longest() -> None:
    policy = Backoff(first=0.5, longest=10.0)
    assert [policy.ceiling(n) for n in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_each_pause_lies_between_half_its_ceiling_and_its_ceiling() -> None:
    pauses = list(itertools.islice(REQUEST.pauses(random.Random(17)), 200))
    for attempt, pause in enumerate(pauses):
        ceiling = REQUEST.ceiling(attempt)
        assert ceiling / 2 <= pause <= ceiling
    assert max(pauses) <= REQUEST.longest and len(set(pauses)) == len(pauses)     # jittered: no two alike


class Longest(random.Random):
    """Jitter that always draws the longest pause."""

    def uniform(self, a: float, b: float) -> float:
        return b


def test_undrawn_the_pauses_are_the_ceilings_doubling_up_to_the_longest() -> None:
    pauses = list(itertools.islice(Backoff(first=0.05, longest=1.0).pauses(Longest()), 7))
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
