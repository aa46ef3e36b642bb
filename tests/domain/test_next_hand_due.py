"""R5, one rule for "is the next hand due": ``Table.next_hand_due`` answers it for the
table service, and agrees with what StartHand accepts."""

from __future__ import annotations

import random

import pytest

from studroom.domain.commands import BuyIn, Leave, OpenTable, SitDown, SitOut, StartHand
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import NOT_ENOUGH_PLAYERS, DomainError
from studroom.domain.simulate import play_hand
from studroom.domain.table import MIN_PLAYERS, Table

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
SEED = "ab" * 32


def opened(auto_deal: bool = True) -> Table:
    table = Table()
    table.execute(OpenTable(table_id="t1", config=TableConfig(game="seven_card_stud", stakes=STAKES,
                                                              auto_deal=auto_deal)))
    return table


def seat(table: Table, seat_no: int, chips: int = 1000) -> None:
    table.execute(SitDown(seat=seat_no, player=f"p{seat_no}"))
    if chips:
        table.execute(BuyIn(seat=seat_no, amount=chips))


def test_R5_the_next_hand_is_due_with_two_ready_seats_and_no_hand() -> None:
    assert MIN_PLAYERS == 2
    assert not Table().next_hand_due()                  # not even open
    table = opened()
    seat(table, 0)
    seat(table, 1, chips=0)                             # seated, no chips yet
    assert not table.next_hand_due()
    table.execute(BuyIn(seat=1, amount=1000))
    assert table.next_hand_due()
    table.execute(StartHand(seed=SEED))
    assert not table.next_hand_due()                    # a hand is under way


@pytest.mark.parametrize("away", [SitOut(seat=1), Leave(seat=1)], ids=["sitting_out", "left"])
def test_R5_a_player_away_does_not_count(away: SitOut | Leave) -> None:
    table = opened()
    for s in range(2):
        seat(table, s)
    table.execute(away)
    assert not table.next_hand_due()
    seat(table, 2)
    assert table.next_hand_due()


def test_R5_a_live_dealers_table_is_never_due_though_it_may_deal() -> None:
    table = opened(auto_deal=False)
    for s in range(2):
        seat(table, s)
    assert not table.next_hand_due()
    assert table.execute(StartHand())                   # the dealer starts it


def test_R5_due_exactly_when_StartHand_is_accepted_on_an_online_table() -> None:
    rng = random.Random(5)
    table = Table()
    log = table.execute(OpenTable(table_id="t1", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    for s in range(4):
        log += table.execute(SitDown(seat=s, player=f"p{s}"))
    answers = set()
    for _ in range(60):
        due = table.next_hand_due()
        answers.add(due)
        copy = Table.replay(log)                        # StartHand on a copy: the table stays as it is
        try:
            copy.execute(StartHand(seed=SEED))
        except DomainError as refused:
            assert not due and refused.code == NOT_ENOUGH_PLAYERS
        else:
            assert due
        if due and rng.random() < 0.5:
            log += play_hand(table, rng)
        else:
            log += change(table, rng)
    assert answers == {True, False}


def change(table: Table, rng: random.Random) -> list:
    """Someone buys in, sits out or comes back."""
    s = rng.randrange(4)
    state = table.seats[s]
    if state.stack == 0:
        return table.execute(BuyIn(seat=s, amount=1000))
    return table.execute(SitOut(seat=s, sitting_out=not state.sitting_out))
