"""Invariants over random legal play (hypothesis): every game, 2..max seats.

Chips are conserved, no card appears twice, every hand ends, replaying the events
rebuilds the identical table, and an illegal command changes nothing.
"""

from __future__ import annotations

import random

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from studroom.domain.commands import Act, Muck, Show, Timeout
from studroom.domain.errors import DomainError
from studroom.domain.events import (
    CardsDealt,
    HandEnded,
    HandShown,
    PotAwarded,
    TurnStarted,
)
from studroom.domain.games import GAMES
from studroom.domain.simulate import new_table, play_hand, top_up
from studroom.domain.table import Table
from studroom.projections.ledger.conservation import check_table

GAME_SEATS = st.sampled_from(list(GAMES)).flatmap(
    lambda g: st.tuples(st.just(g), st.integers(2, GAMES[g].max_seats))
)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _play(game: str, seats: int, seed: int, hands: int, timeout_rate: float = 0.0, **config):
    rng = random.Random(seed)
    table, events = new_table(game, seats, **config)
    per_hand = []
    for _ in range(hands):
        hand_events = play_hand(table, rng, timeout_rate)
        per_hand.append(hand_events)
        events += hand_events + top_up(table, 2000)
    return table, events, per_hand


@SETTINGS
@given(GAME_SEATS, st.integers(0, 2**32), st.sampled_from([0.0, 0.1]))
def test_chips_are_conserved_stacks_plus_rake(game_seats, seed, timeout_rate):
    game, seats = game_seats
    table, events, per_hand = _play(game, seats, seed, 4, timeout_rate)
    check = check_table("t", events)               # bought = stacks + rake between every two hands
    assert check.conserved and check.in_hand == 0, check.bad
    for hand in per_hand:
        end = next(e for e in hand if isinstance(e, HandEnded))
        awarded = sum(sum(p.high.values()) + sum(p.low.values()) + p.rake for p in hand if isinstance(p, PotAwarded))
        pots = sum(p.amount for p in hand if isinstance(p, PotAwarded))
        assert awarded == pots                      # every chip of every pot went somewhere
        assert sum(end.net.values()) == -end.rake   # SCENARIO.md: net sums to minus the rake


@SETTINGS
@given(GAME_SEATS, st.integers(0, 2**32))
def test_no_card_is_dealt_twice_in_a_hand(game_seats, seed):
    game, seats = game_seats
    _, _, per_hand = _play(game, seats, seed, 3)
    for hand in per_hand:
        seen = []
        for e in hand:
            if isinstance(e, CardsDealt):
                seen += [d.card for d in e.cards] + ([e.community] if e.community else [])
        assert len(seen) == len(set(seen))


@SETTINGS
@given(GAME_SEATS, st.integers(0, 2**32))
def test_every_hand_ends_and_replay_rebuilds_the_same_table(game_seats, seed):
    game, seats = game_seats
    table, events, per_hand = _play(game, seats, seed, 3, 0.05)
    assert all(isinstance(hand[-1], HandEnded) or any(isinstance(e, HandEnded) for e in hand) for hand in per_hand)
    assert Table.replay(events).state() == table.state()


def test_replay_through_json_gives_the_same_state():
    from studroom.domain.events import TableEvent

    table, events, _ = _play("seven_card_stud_hilo", 6, 7, 10, 0.05)
    decoded = msgspec.json.decode(msgspec.json.encode(events), type=list[TableEvent])
    assert decoded == events
    assert Table.replay(decoded).state() == table.state()


@SETTINGS
@given(GAME_SEATS, st.integers(0, 2**32), st.data())
def test_illegal_commands_are_refused_without_any_change(game_seats, seed, data):
    game, seats = game_seats
    rng = random.Random(seed)
    table, events = new_table(game, seats)
    events += play_hand(table, rng)       # one hand done, start another and stop midway
    from studroom.domain.commands import StartHand

    events += table.execute(StartHand(seed=rng.randbytes(32).hex()))
    turn = next(e for e in reversed(events) if isinstance(e, TurnStarted))
    before = table.state()
    other = data.draw(st.sampled_from([s for s in range(seats) if s != turn.seat] or [99]))
    illegal = [
        Act(seat=other, action="call"),                    # out of turn
        Act(seat=99, action="fold"),                       # no such seat
        Timeout(turn=turn.turn - 1),                       # stale (R20)
        Show(seat=turn.seat or 0),                         # no showdown now
        Muck(seat=turn.seat or 0),
    ]
    if turn.seat is not None:
        not_offered = [a for a in ("check", "bet", "raise", "complete", "bring_in", "call") if a not in turn.options]
        illegal += [Act(seat=turn.seat, action=a) for a in not_offered]
    for command in illegal:
        with pytest.raises(DomainError):
            table.execute(command)
        assert table.state() == before


def test_showdown_reveals_only_hands_that_stayed():
    _, _, per_hand = _play("seven_card_stud", 5, 11, 30)
    for hand in per_hand:
        folded = set()
        for e in hand:
            if type(e).__name__ == "Acted" and e.action == "fold":
                folded.add(e.seat)
            if isinstance(e, HandShown):
                assert e.seat not in folded
