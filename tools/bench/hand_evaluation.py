"""Evaluations per second of the hand evaluator (studroom.domain.hand_ranking), for ``bench domain``."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from studroom.domain.hand_ranking import high_value, low_value

_HANDS_PER_CASE = 20_000


def _hands(rng: random.Random, size: int) -> list[tuple[int, ...]]:
    deck = list(range(52))
    return [tuple(rng.sample(deck, size)) for _ in range(_HANDS_PER_CASE)]


def _hi_lo(cards: Sequence[int]) -> tuple[int, int | None]:
    return high_value(cards), low_value(cards)


def _rate(fn: Callable[[Sequence[int]], object], hands: list[tuple[int, ...]],
             seconds: float) -> int:
    done = 0
    clock = time.perf_counter
    start = clock()
    while True:
        for h in hands:
            fn(h)
        done += len(hands)
        elapsed = clock() - start
        if elapsed >= seconds:
            return int(done / elapsed)


def measure(seconds_per_case: float = 1.0, seed: int = 2024) -> list[dict]:
    """One row per case, e.g. ``{"case": "7-card high", "evals_per_s": 1100000}``: each
    case evaluates its seeded hands (drawn before any timing) until ``seconds_per_case``
    has passed."""
    rng = random.Random(seed)
    seven = _hands(rng, 7)
    five = _hands(rng, 5)
    cases = [
        ("7-card high", high_value, seven),
        ("7-card hi/lo", _hi_lo, seven),
        ("5-card high", high_value, five),
    ]
    return [
        {"case": name, "evals_per_s": _rate(fn, hands, seconds_per_case)}
        for name, fn, hands in cases
    ]
