"""The seat map private copies are addressed by (R33): who holds which seat of a table."""

from __future__ import annotations

import random

from studroom.domain import simulate, views
from studroom.domain.commands import Leave, SitDown
from studroom.domain.events import (
    CardsDealt, HandMucked, HandSeat, HandStarted, PlayerLeft, PlayerSatDown, TableOpened,
)
from studroom.domain.seating import Seating
from studroom.domain.table import Table


def _hand_started(*players: tuple[int, str]) -> HandStarted:
    seats = [HandSeat(seat=seat, player=player, stack=100) for seat, player in players]
    return HandStarted(hand_no=1, button=players[0][0], seats=seats, commitment="c")


def test_an_empty_table_has_no_holders() -> None:
    seating = Seating()
    assert seating.version == 0
    assert seating.holder(0) is None


def test_seating_counts_every_event_as_a_version() -> None:
    seating = Seating()
    opened = simulate.new_table("seven_card_stud", 2)[1][0]
    assert isinstance(opened, TableOpened)
    seating.apply(opened)
    seating.apply(PlayerSatDown(seat=3, player="ann"))
    assert seating.version == 2
    assert seating.holder(3) == "ann"
    assert seating.holder(0) is None


def test_R33_a_seat_is_held_by_whoever_sits_in_it_between_hands() -> None:
    seating = Seating.replay([PlayerSatDown(seat=1, player="ann"), PlayerLeft(seat=1, player="ann", cashed_out=5)])
    assert seating.holder(1) is None
    seating.apply(PlayerSatDown(seat=1, player="bob"))
    assert seating.holder(1) == "bob"


def test_R33_a_player_who_left_during_a_hand_holds_his_seat_until_the_next_hand() -> None:
    seating = Seating.replay([
        PlayerSatDown(seat=0, player="ann"),
        PlayerSatDown(seat=1, player="bob"),
        _hand_started((0, "ann"), (1, "bob")),
        PlayerLeft(seat=1, player="bob", cashed_out=0),
        PlayerSatDown(seat=1, player="cy"),
    ])
    assert seating.holder(1) == "bob"             # his cards of the hand dealt
    seating.apply(_hand_started((1, "cy"), (0, "ann")))
    assert seating.holder(1) == "cy"
    assert seating.holder(0) == "ann"


def test_R33_a_hand_names_the_holders_of_the_seats_it_deals_in() -> None:
    seating = Seating.replay([_hand_started((4, "dee"))])      # no PlayerSatDown seen
    assert seating.holder(4) == "dee"


def test_R33_replay_gives_the_table_own_seats_and_every_private_copy_a_holder() -> None:
    """A table where players come and go: after every event the seat map agrees with
    the aggregate, and every seat with private cards has the player dealt in there."""
    rng = random.Random(8)
    table, events = simulate.new_table("seven_card_stud", 5)
    newcomers = 0
    for _ in range(40):
        if rng.random() < 0.3:
            seat = rng.choice(sorted(table.seats))
            newcomers += 1
            events += table.execute(Leave(seat=seat))
            events += table.execute(SitDown(seat=seat, player=f"n{newcomers}"))
        events += simulate.play_hand(table, rng, timeout_rate=0.05)
        events += simulate.top_up(table, 2000)
    assert newcomers > 5

    seating = Seating()
    dealt_in: dict[int, str] = {}
    copies = 0
    for version, event in enumerate(events, 1):
        if isinstance(event, HandStarted):
            dealt_in = {s.seat: s.player for s in event.seats}
        for seat in views.owners_of_private_cards(event):
            assert isinstance(event, (CardsDealt, HandMucked))    # a muck goes to the showdown's players
            assert seating.holder(seat) == dealt_in[seat]
            copies += 1
        seating.apply(event)
        assert seating.version == version
    assert copies > 100
    replayed = Seating.replay(events)
    assert (replayed.version, replayed.seated, replayed.hand) == (seating.version, seating.seated, seating.hand)
    assert seating.seated == {seat: state.player for seat, state in Table.replay(events).seats.items()}
