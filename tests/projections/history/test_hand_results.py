"""Each dealt-in player's result of a hand: net, chips won, pots won, rake paid (R27:
by the pots' winners, adding up to the hand's rake)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st
from studroom.domain.config import Rake
from studroom.domain.events import AntesCollected, HandEnded, PotAwarded
from studroom.domain.simulate import new_table, play_hand, top_up
from studroom.domain.hands import spans
from studroom.projections.history.results import apportion, results


def test_R27_results_add_up_to_the_hand_rake_won_and_net() -> None:
    rng = random.Random(5)
    checked = 0
    for game, players in (("seven_card_stud", 5), ("seven_card_stud_hilo", 7), ("five_card_stud", 9)):
        table, events = new_table(game, players, stack=500, rake=Rake(basis_points=700, cap=25))
        for _ in range(40):
            events += top_up(table, 500)
            events += play_hand(table, rng, timeout_rate=0.03)
        for span in spans(events):
            hand = events[span.start:span.end]
            found = results(hand)
            if span.cancelled:
                assert found == []
                continue
            ended = next(e for e in hand if isinstance(e, HandEnded))
            awards = [e for e in hand if isinstance(e, PotAwarded)]
            dealt = next(e for e in hand if isinstance(e, AntesCollected))
            assert [r.seat for r in found] == dealt.seats
            assert sum(r.rake_paid for r in found) == ended.rake
            assert sum(r.won for r in found) == sum(a.amount - a.rake for a in awards)
            assert sum(r.net for r in found) == -ended.rake
            for r in found:
                assert r.net == ended.net[r.seat] == r.end_stack - r.start_stack
                assert r.rake_paid == 0 or r.won > 0 or all(a.amount == a.rake for a in awards)
            checked += 1
    assert checked > 100


@given(st.integers(0, 10**6), st.dictionaries(st.integers(0, 9), st.integers(1, 10**6), min_size=1, max_size=10))
def test_apportion_gives_every_chip_once_in_proportion(total: int, weights: dict[int, int]) -> None:
    shares = apportion(total, weights)
    assert sum(shares.values()) == total and shares.keys() == weights.keys()
    whole = sum(weights.values())
    for seat, share in shares.items():
        assert abs(share - total * weights[seat] / whole) < 1
