"""Validation at the door: everything a table stores is publishable (names,
domain/names.py) and every number within the room's bounds (domain/limits.py)."""

from __future__ import annotations

import pytest

from studroom.domain.commands import BuyIn, Command, OpenTable, SitDown
from studroom.domain.config import Rake, Stakes, TableConfig
from studroom.domain.errors import DomainError
from studroom.domain.limits import MAX_STAKE, MAX_TABLE_CHIPS
from studroom.domain.names import is_name
from studroom.domain.table import Table

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
NOT_NAMES = ["", "Zoë", "a b", "a.b", "a*", "a>", "a/b", "x" * 65, "abc\n", "\nabc", "x" * 1_000_000]


def opened(**config) -> Table:
    table = Table()
    table.execute(OpenTable(table_id="t1", config=TableConfig(game="seven_card_stud", stakes=STAKES, **config)))
    return table


def refused(table: Table, command: Command, code: str) -> None:
    before = table.state()
    with pytest.raises(DomainError) as caught:
        table.execute(command)
    assert caught.value.code == code, caught.value
    assert len(caught.value.message) < 200                  # a refusal never echoes a megabyte
    assert table.state() == before


@pytest.mark.parametrize("name", ["a", "A-Z_0-9", "x" * 64])
def test_names_are_1_to_64_letters_digits_underscores_and_dashes(name: str):
    assert is_name(name)
    assert opened().execute(SitDown(seat=0, player=name))


@pytest.mark.parametrize("name", NOT_NAMES, ids=range(len(NOT_NAMES)))
def test_a_player_name_that_is_no_name_is_refused(name: str):
    assert not is_name(name)
    refused(opened(), SitDown(seat=0, player=name), "bad_name")


@pytest.mark.parametrize("name", NOT_NAMES, ids=range(len(NOT_NAMES)))
def test_a_table_id_that_is_no_name_is_refused(name: str):
    refused(Table(), OpenTable(table_id=name, config=TableConfig(game="seven_card_stud", stakes=STAKES)), "bad_name")


def test_is_name_takes_only_strings():
    assert not is_name(None) and not is_name(7) and not is_name(b"p0")


def stakes(**changes) -> Stakes:
    values = {"ante": 5, "bring_in": 10, "small_bet": 20, "big_bet": 40} | changes
    return Stakes(**values)


OUT_OF_BOUNDS = {
    "action_seconds_0": ({"action_seconds": 0}, "bad_config"),
    "action_seconds_1e14": ({"action_seconds": 10**14}, "bad_config"),
    "ante_seconds_3601": ({"ante_seconds": 3601}, "bad_config"),
    "showdown_seconds_negative": ({"showdown_seconds": -1}, "bad_config"),
    "big_bet_above_1e9": ({"stakes": stakes(big_bet=MAX_STAKE + 1)}, "bad_stakes"),
    "small_bet_above_1e9": ({"stakes": stakes(small_bet=MAX_STAKE + 1, big_bet=MAX_STAKE + 1)}, "bad_stakes"),
    "ante_above_1e9": ({"stakes": stakes(ante=MAX_STAKE + 1)}, "bad_stakes"),
    "bring_in_0": ({"stakes": stakes(bring_in=0)}, "bad_stakes"),
    "big_bet_2_pow_64": ({"stakes": stakes(big_bet=2**64)}, "bad_stakes"),
    "rake_cap_above_1e9": ({"rake": Rake(basis_points=500, cap=MAX_STAKE + 1)}, "bad_stakes"),
    "rake_above_100_percent": ({"rake": Rake(basis_points=10_001)}, "bad_stakes"),
    "max_buy_in_above_1e12": ({"max_buy_in": MAX_TABLE_CHIPS + 1}, "bad_stakes"),
    "max_buy_in_below_minimum": ({"max_buy_in": 199}, "bad_stakes"),
    "one_seat": ({"seats": 1}, "too_many_seats"),
    "eleven_seats": ({"seats": 11}, "too_many_seats"),
}


@pytest.mark.parametrize("settings,code", OUT_OF_BOUNDS.values(), ids=OUT_OF_BOUNDS.keys())
def test_settings_out_of_bounds_are_refused(settings: dict, code: str):
    config = TableConfig(game="seven_card_stud", **({"stakes": STAKES} | settings))
    refused(Table(), OpenTable(table_id="t1", config=config), code)


def test_settings_at_their_bounds_are_taken():
    assert opened(action_seconds=1, ante_seconds=3600, showdown_seconds=3600, max_buy_in=MAX_TABLE_CHIPS,
                  rake=Rake(basis_points=10_000, cap=MAX_STAKE))
    table = Table()
    big = Stakes(ante=MAX_STAKE, small_bet=MAX_STAKE, big_bet=MAX_STAKE)
    assert table.execute(OpenTable(table_id="t1", config=TableConfig(game="five_card_stud", stakes=big)))


def test_an_unknown_game_is_refused_without_echoing_it():
    config = TableConfig(game="x" * 1_000_000, stakes=STAKES)
    refused(Table(), OpenTable(table_id="t1", config=config), "unknown_game")


def test_R3_a_buy_in_is_a_positive_amount():
    table = opened()
    table.execute(SitDown(seat=0, player="p0"))
    refused(table, BuyIn(seat=0, amount=0), "bad_amount")
    refused(table, BuyIn(seat=0, amount=-500), "bad_amount")


def test_R3_without_a_table_maximum_a_seat_holds_at_most_100_big_bets_after_a_buy_in():
    table = opened()
    table.execute(SitDown(seat=0, player="p0"))
    refused(table, BuyIn(seat=0, amount=100 * 40 + 1), "over_max_buy_in")
    table.execute(BuyIn(seat=0, amount=1000))
    refused(table, BuyIn(seat=0, amount=3001), "over_max_buy_in")     # a top-up counts the stack
    table.execute(BuyIn(seat=0, amount=3000))
    assert table.seats[0].stack == 100 * 40


def test_R3_a_buy_in_of_2_pow_64_chips_is_refused():
    table = opened(max_buy_in=MAX_TABLE_CHIPS)
    table.execute(SitDown(seat=0, player="p0"))
    refused(table, BuyIn(seat=0, amount=2**64), "over_max_buy_in")


def test_R3_the_stack_after_a_buy_in_is_within_the_tables_minimum_and_maximum():
    table = opened(max_buy_in=1000)
    table.execute(SitDown(seat=0, player="p0"))
    refused(table, BuyIn(seat=0, amount=199), "short_buy_in")
    refused(table, BuyIn(seat=0, amount=1001), "over_max_buy_in")
    table.execute(BuyIn(seat=0, amount=1000))


def test_a_table_never_holds_more_than_10_pow_12_chips():
    table = opened(max_buy_in=MAX_TABLE_CHIPS)
    for seat in range(2):
        table.execute(SitDown(seat=seat, player=f"p{seat}"))
    table.execute(BuyIn(seat=0, amount=MAX_TABLE_CHIPS - 200))
    table.execute(BuyIn(seat=1, amount=200))
    table.execute(SitDown(seat=2, player="p2"))
    refused(table, BuyIn(seat=2, amount=200), "over_max_buy_in")
