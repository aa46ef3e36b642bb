"""Invariants over random legal play (hypothesis): every game, 2..max seats.

Chips are conserved, no card appears twice, every hand ends, replaying the events
rebuilds the identical table, and an illegal command changes nothing.
"""

from __future__ import annotations

import itertools
import random

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from studroom.domain.authority import Sender
from studroom.domain.commands import (
    Act, CloseTable, Command, ConfigureTable, JoinWaitingList, LeaveWaitingList, Muck, PauseTable,
    RemovePlayer, ResumeTable, Show, SitDown, SitOut, SitOutPlayer, StartHand, Timeout,
)
from studroom.domain.config import Stakes
from studroom.domain.errors import DomainError
from studroom.domain.events import (
    CardsDealt,
    ChipsBought,
    HandEnded,
    HandShown,
    PlayerLeft,
    PotAwarded,
    TableEvent,
    TurnStarted,
)
from studroom.domain.games import GAMES
from studroom.domain.simulate import new_table, play_hand, random_move, top_up
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


# --- the floor's commands (an operator's) and absent players (R34), drawn in ---------

FLOOR = Sender("operator", "floor")
FLOOR_KINDS = ("sit_out", "remove", "configure", "pause", "resume", "sit_in", "join", "leave_list", "take_offer")
WAITING = ("w1", "w2", "w3")             # players who wait for a seat (the waiting list)


def _floor_command(table: Table, rng: random.Random) -> tuple[Command, Sender | None]:
    """A random command of the floor's (or a player sitting in again): legal or not."""
    kind = rng.choice(FLOOR_KINDS)
    names = [s.player for s in table.seats.values()] + ["nobody"]
    if kind == "sit_out":
        return SitOutPlayer(player=rng.choice(names)), FLOOR
    if kind == "remove":
        return RemovePlayer(player=rng.choice(names)), FLOOR
    if kind == "configure":
        assert table.config is not None
        small = rng.choice((10, 20, 40))
        stakes = Stakes(ante=rng.choice((0, 5, 10)), small_bet=small, big_bet=2 * small)   # ante 0: R08's bring-in
        return ConfigureTable(config=msgspec.structs.replace(table.config, stakes=stakes)), FLOOR
    if kind == "pause":
        return PauseTable(), FLOOR
    if kind == "resume":
        return ResumeTable(), FLOOR
    if kind in ("join", "leave_list"):
        name = rng.choice(WAITING)
        command = JoinWaitingList(player=name) if kind == "join" else LeaveWaitingList(player=name)
        return command, Sender("player", name)
    if kind == "take_offer" and table.offer is not None:
        offer = table.offer
        return SitDown(seat=offer.seat, player=offer.player), Sender("player", offer.player)
    return SitOut(seat=rng.choice(list(table.seats) or [0]), sitting_out=False), None


def _try(table: Table, command: Command, by: Sender | None, numbers: itertools.count) -> list:
    """Carry a command out (with the sender's next id), or nothing if the table refuses it."""
    if by is not None:
        command = msgspec.structs.replace(command, command_id=str(next(numbers)))
    before = table.state()
    try:
        return table.execute(command, by)
    except DomainError:
        assert table.state() == before
        return []


def _play_with_the_floor(game: str, seats: int, seed: int, timeout_rate: float, floor_rate: float) -> tuple:
    """Hands of random legal play with the floor's commands now and then, between hands
    and during them; the table closed at the end."""
    rng, numbers = random.Random(seed), itertools.count(1)
    table, events = new_table(game, seats)
    for _ in range(6):
        if rng.random() < floor_rate:
            events += _try(table, *_floor_command(table, rng), numbers)
        if table.paused or len(table.ready_seats()) < 2:
            continue
        events += table.execute(StartHand(seed=rng.randbytes(32).hex()))
        while (hand := table.hand) is not None:
            turn = table.last_turn
            assert turn is not None
            if rng.random() < floor_rate:
                events += _try(table, *_floor_command(table, rng), numbers)
                continue
            if hand.turn_kind is None:                   # no turn but the timer's to end
                command: Command = Timeout(turn=turn.turn)
            else:
                command = random_move(hand, turn, rng, timeout_rate)
            try:
                events += table.execute(command)
            except DomainError:
                events += table.execute(Show(seat=command.seat))  # type: ignore[attr-defined]
    events += _try(table, CloseTable(), FLOOR, numbers)
    while table.hand is not None:        # a hand in play when the floor closed: played out
        turn = table.last_turn
        assert turn is not None
        events += table.execute(Timeout(turn=turn.turn))
    return table, events


@SETTINGS
@given(GAME_SEATS, st.integers(0, 2**32), st.sampled_from([0.0, 0.2]), st.sampled_from([0.1, 0.4]))
def test_the_floors_commands_and_R34_conserve_chips_and_replay_exactly(game_seats, seed, timeout_rate, floor_rate):
    game, seats = game_seats
    table, events = _play_with_the_floor(game, seats, seed, timeout_rate, floor_rate)
    check = check_table("t", events)
    assert check.conserved and check.in_hand == 0, check.bad
    assert table.closed and not table.seats                   # closed: every chip cashed out or raked
    bought = sum(e.amount for e in events if isinstance(e, ChipsBought))
    out = sum(e.cashed_out for e in events if isinstance(e, PlayerLeft))
    assert bought == out + sum(e.rake for e in events if isinstance(e, HandEnded))
    decoded = msgspec.json.decode(msgspec.json.encode(events), type=list[TableEvent])
    assert Table.replay(decoded).state() == table.state()
