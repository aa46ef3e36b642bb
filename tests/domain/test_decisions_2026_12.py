"""The 2026-12 rule decisions (R15, R22) over many random hands, as the table offers them
turn by turn; the golden scenarios (tests/scenarios/R15_*, R22_*) show single hands.

Each hand's events are applied one by one to a second table, so every turn is judged
against the state in which it was offered."""

from __future__ import annotations

import random

import pytest

from studroom.domain.events import Event, HandShown, RoundStarted, ShowdownStarted, TurnStarted
from studroom.domain.simulate import new_table, play_hand, top_up
from studroom.domain.table import Table

RAISES = {"bet", "raise", "complete"}


def _hands(game: str, players: int, seed: int, hands: int = 150) -> list[Event]:
    rng = random.Random(seed)
    table, events = new_table(game, players, stack=300)
    for _ in range(hands):
        events += top_up(table, 300)
        events += play_hand(table, rng, timeout_rate=0.05)
    return events


# random play with short stacks: these rooms meet the case a few times each
ROOMS = [("seven_card_stud", 2, 1), ("seven_card_stud", 3, 1), ("seven_card_stud", 3, 3),
         ("seven_card_stud_hilo", 3, 3), ("five_card_stud", 3, 1)]


def test_R15_no_round_for_fewer_than_two_bettors_and_no_raise_against_all_ins():
    met = 0
    for game, players, seed in ROOMS:
        mirror = Table()
        for e in _hands(game, players, seed):
            hand = mirror.hand
            if isinstance(e, RoundStarted):
                assert hand is not None and len(hand.actors()) >= 2, "a round opened for one bettor"
            if isinstance(e, TurnStarted) and e.kind == "act" and hand is not None and hand.phase == "betting":
                if len(hand.actors()) == 1:          # every opponent of the player to act is all-in
                    assert not RAISES & set(e.options), e
                    assert e.to_call > 0, "asked to act facing nothing, every opponent all-in"
                    met += 1
            mirror.apply(e)
    assert met >= 5, "the rooms no longer meet the case: pick others"


@pytest.mark.parametrize("game, players, seed", [("seven_card_stud", 2, 5), ("seven_card_stud_hilo", 4, 6)])
def test_R22_the_first_to_show_is_shown_at_once_and_never_asked(game, players, seed):
    events = _hands(game, players, seed)
    showdowns = 0
    for i, e in enumerate(events):
        if isinstance(e, ShowdownStarted):
            shown = events[i + 1]
            assert isinstance(shown, HandShown) and shown.seat == e.order[0]
            showdowns += 1
        if isinstance(e, TurnStarted) and e.kind == "show":
            assert e.options == ["show", "muck"]
    assert showdowns > 10
