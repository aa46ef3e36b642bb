"""The one chip check (projections/ledger/conservation.py) finds what it must."""

from __future__ import annotations

import random

import msgspec
from studroom.domain.config import Rake
from studroom.domain.events import ChipsBought, HandEnded
from studroom.domain.simulate import new_table, play_hand
from studroom.projections.ledger.conservation import check_table, check_tables


def _hands(n: int, seed: int = 7) -> list:
    table, events = new_table("seven_card_stud", 4, rake=Rake(basis_points=500, cap=30))
    rng = random.Random(seed)
    for _ in range(n):
        events += play_hand(table, rng)
    return events


def test_an_honest_table_conserves_its_chips() -> None:
    events = _hands(20)
    check = check_table("t", events)
    assert check.conserved, check.bad
    assert check.hands == 20 and check.bought == 4 * 2000 and check.rake > 0
    assert check.behind + check.rake == check.bought and check.in_hand == 0


def test_a_hand_under_way_counts_its_chips_as_in_hand() -> None:
    events = _hands(3)
    cut = next(i for i, e in enumerate(events) if type(e).__name__ == "Acted" and i > len(events) - 20)
    check = check_table("t", events[:cut + 1])
    assert check.conserved, check.bad
    assert check.in_hand > 0


def test_a_chip_too_many_in_a_buy_in_is_found_with_its_event() -> None:
    events = _hands(5)
    i = next(i for i, e in enumerate(events) if isinstance(e, ChipsBought))
    events[i] = msgspec.structs.replace(events[i], amount=events[i].amount + 1)
    check = check_table("t7", events)
    assert not check.conserved
    assert check.bad[0].startswith("t7: after event")


def test_rake_that_was_never_taken_is_found() -> None:
    events = _hands(10)
    i = next(i for i, e in enumerate(events) if isinstance(e, HandEnded) and e.rake > 0)
    events[i] = msgspec.structs.replace(events[i], rake=events[i].rake + 1)
    assert not check_table("t", events).conserved


def test_totals_of_several_tables_add_up() -> None:
    a, b = _hands(4, seed=1), _hands(6, seed=2)
    total = check_tables({"a": a, "b": b})
    assert total.conserved and total.tables == 2 and total.hands == 10
    assert total.bought == check_table("a", a).bought + check_table("b", b).bought
