"""Hand evaluation against an independent brute-force reference (R22, R25, R10, R7, R24)."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studroom.domain.cards import parse_many
from studroom.domain.hand_ranking import (
    best_five,
    board_value,
    describe_high,
    describe_low,
    high_category,
    high_value,
    highest_card,
    low_value,
    lowest_card,
)

# --- brute-force reference (tests only) --------------------------------------------


def ref_five(cards) -> tuple:
    """Straightforward classification of exactly five cards into a comparable tuple."""
    ranks = sorted((c >> 2 for c in cards), reverse=True)
    suits = {c & 3 for c in cards}
    counts = Counter(ranks)
    groups = sorted(counts.items(), key=lambda rc: (rc[1], rc[0]), reverse=True)
    shape = [k for _, k in groups]
    order = [r for r, _ in groups]
    flush = len(suits) == 1
    straight_top = None
    if len(counts) == 5:
        if ranks[0] - ranks[4] == 4:
            straight_top = ranks[0]
        elif ranks == [12, 3, 2, 1, 0]:
            straight_top = 3
    if straight_top is not None and flush:
        return (8, straight_top)
    if shape == [4, 1]:
        return (7, *order)
    if shape == [3, 2]:
        return (6, *order)
    if flush:
        return (5, *ranks)
    if straight_top is not None:
        return (4, straight_top)
    if shape == [3, 1, 1]:
        return (3, *order)
    if shape == [2, 2, 1]:
        return (2, *order)
    if shape == [2, 1, 1, 1]:
        return (1, *order)
    return (0, *ranks)


def ref_high(cards) -> tuple:
    return max(ref_five(f) for f in combinations(cards, 5))


def ref_low(cards):
    """Best 8-or-better low as a descending tuple of ranks (ace = 1), or None."""
    best = None
    for five in combinations(cards, 5):
        lows = sorted((1 if c >> 2 == 12 else (c >> 2) + 2 for c in five), reverse=True)
        if len(set(lows)) == 5 and lows[0] <= 8:
            if best is None or lows < best:
                best = lows
    return None if best is None else tuple(best)


def sign(x) -> int:
    return (x > 0) - (x < 0)


def cmp(a, b) -> int:
    return (a > b) - (a < b)


def low_cmp(a, b) -> int:
    """Order of lows: None (no low) is worse than any low; smaller is better."""
    if a is None or b is None:
        return (a is None) - (b is None)  # +1 when a is worse
    return cmp(a, b)


def c(text: str) -> list[int]:
    return parse_many(text.split())


def hv(text: str) -> int:
    return high_value(c(text))


def lv(text: str):
    return low_value(c(text))


def assert_same_order(h1, h2):
    assert sign(high_value(h1) - high_value(h2)) == cmp(ref_high(h1), ref_high(h2)), (h1, h2)


def assert_same_low_order(h1, h2):
    a, b = low_value(h1), low_value(h2)
    mine = low_cmp(a, b)
    ref = low_cmp(ref_low(h1), ref_low(h2))
    assert mine == ref, (h1, h2)
    assert (a is None) == (ref_low(h1) is None)


# --- R22 high hands: agreement with the reference ----------------------------------

hands = st.integers(min_value=5, max_value=8).flatmap(
    lambda n: st.lists(st.integers(0, 51), min_size=n, max_size=n, unique=True)
)


@settings(max_examples=600, deadline=None)
@given(hands, hands)
def test_R22_high_value_orders_like_brute_force(h1, h2):
    assert_same_order(h1, h2)
    assert high_category(high_value(h1)) == ref_high(h1)[0]


@settings(max_examples=300, deadline=None)
@given(hands)
def test_R22_best_five_is_a_best_subset(h):
    five = best_five(h)
    assert len(five) == 5 and set(five) <= set(h)
    assert high_value(five) == high_value(h)
    assert ref_five(five) == ref_high(h)


def test_R22_seeded_random_7_card_pairs_agree_with_reference():
    rng = random.Random(20240211)
    for _ in range(20_000):
        h1 = rng.sample(range(52), 7)
        h2 = rng.sample(range(52), 7)
        assert_same_order(h1, h2)


@pytest.mark.parametrize("n", [5, 6, 8])
def test_R22_seeded_random_other_sizes_agree_with_reference(n):
    rng = random.Random(n)
    for _ in range(1_500):
        assert_same_order(rng.sample(range(52), n), rng.sample(range(52), n))


def test_R22_seeded_random_equal_values_are_exact_ties():
    rng = random.Random(7)
    seen: dict[tuple, int] = {}
    for _ in range(5_000):
        h = rng.sample(range(52), 7)
        ref, mine = ref_high(h), high_value(h)
        assert seen.setdefault(ref, mine) == mine


def test_R22_every_five_card_category_is_ordered():
    ladder = [
        "Kd 9c 7h 4s 2c",  # high card
        "2c 2d 3h 4s 6c",  # pair
        "2c 2d 3h 3s 4c",  # two pair
        "2c 2d 2h 3s 4c",  # trips
        "Ah 2c 3d 4s 5h",  # wheel
        "2c 3c 4c 5c 7c",  # flush
        "2c 2d 2h 3s 3c",  # full house
        "2c 2d 2h 2s 3c",  # quads
        "Ah 2h 3h 4h 5h",  # steel wheel
    ]
    values = [hv(h) for h in ladder]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert [high_category(v) for v in values] == list(range(9))


def test_R22_wheel_is_the_lowest_straight_and_broadway_the_highest():
    assert hv("Ah 2c 3d 4s 5h") < hv("2h 3c 4d 5s 6h") < hv("Th Jc Qd Ks Ah")
    assert hv("Ah 2c 3d 4s 5h") > hv("Ah Ac Kd Ks Qh")  # wheel beats two pair
    assert describe_high(hv("Ah 2c 3d 4s 5h")) == "straight, five high"
    assert describe_high(hv("Th Jc Qd Ks Ah")) == "straight, ace high"
    assert describe_high(hv("2h 3c 4d 5s 6h")) == "straight, six high"
    # no wrap-around straight
    assert high_category(hv("Qh Kc Ad 2s 3h")) == 0


def test_R22_steel_wheel_is_the_lowest_straight_flush():
    steel = hv("Ah 2h 3h 4h 5h")
    assert high_category(steel) == 8
    assert steel < hv("2s 3s 4s 5s 6s")
    assert steel > hv("Ac Ad Ah As Kc")
    # 7 cards: wheel straight flush beats the ace-high flush in the same suit
    assert hv("Ah 2h 3h 4h 5h Kh Qh") == steel
    assert best_five(c("Ah 2h 3h 4h 5h Kh Qh")) == tuple(c("5h 4h 3h 2h Ah"))


def test_R22_ace_high_flush_beats_king_high_flush_and_kickers_count():
    assert hv("Ac 9c 7c 4c 2c") > hv("Kd Qd Jd 9d 7d")
    assert hv("Ac 9c 7c 4c 3c") > hv("Ad 9d 7d 4d 2d")
    assert hv("Ac 9c 7c 4c 2c") == hv("Ad 9d 7d 4d 2d")  # suits never break ties
    assert describe_high(hv("Ac 9c 7c 4c 2c")) == "flush, ace high"
    # a 6-card flush plays its top five
    assert hv("Ac 9c 7c 4c 3c 2c Kd") == hv("Ac 9c 7c 4c 3c")


def test_R22_two_pair_kicker_and_third_pair():
    assert hv("Jc Jd 4h 4s 9c") > hv("Jh Js 4c 4d 8c")
    assert hv("Jc Jd 4h 4s 9c") == hv("Jh Js 4c 4d 9d")
    # three pairs in seven cards: the best two plus the best kicker
    assert hv("Jc Jd 4h 4s 3c 3d 2h") == hv("Jc Jd 4h 4s 3c")
    assert hv("Jc Jd 4h 4s 3c 3d Th") == hv("Jc Jd 4h 4s Th")
    assert hv("Jc Jd 9h 9s 3c 3d 2h") > hv("Jc Jd 4h 4s Ac Kd Qh")
    assert describe_high(hv("Jc Jd 4h 4s 9c")) == "two pair, jacks and fours"


def test_R22_full_house_from_two_trips_in_seven_cards():
    v = hv("Kh Kd Ks 7c 7d 7h 2c")
    assert high_category(v) == 6
    assert v == hv("Kh Kd Ks 7c 7d")
    assert describe_high(v) == "full house, kings full of sevens"
    assert hv("7h 7d 7s Kc Kd Kh 2c") == v
    # trips plus two pairs: the higher pair fills
    assert hv("5h 5d 5s 9c 9d 3h 3c") == hv("5h 5d 5s 9c 9d")


def test_R22_quads_take_the_best_kicker():
    assert hv("8c 8d 8h 8s 2c 2d Kh") == hv("8c 8d 8h 8s Kh")
    assert hv("8c 8d 8h 8s 3c 3d 3h") == hv("8c 8d 8h 8s 3c")
    assert hv("8c 8d 8h 8s Ac") > hv("8c 8d 8h 8s Kc")
    assert describe_high(hv("8c 8d 8h 8s Ac")) == "four of a kind, eights"


def test_R22_eight_card_hands():
    # 8 cards (community cards): full house beats the flush only possible with 8
    v = hv("Ah Kh 9h 5h 2h Ac Ad Kd")
    assert high_category(v) == 6 and v == hv("Ah Ac Ad Kh Kd")
    assert hv("2c 3d 4h 5s 6c 7d 8h 9s") == hv("5c 6d 7h 8s 9c")
    assert high_category(hv("Ac Kc Qc Jc Tc 9c 8c 7c")) == 8
    assert hv("Ac Ad Ah As Kc Kd Kh Ks") == hv("Ac Ad Ah As Kc")


def test_R22_describe_high_texts():
    assert describe_high(hv("Kd 9c 7h 4s 2c")) == "high card king"
    assert describe_high(hv("Ad 9c 7h 4s 2c")) == "high card ace"
    assert describe_high(hv("Qc Qd 3h 4s 6c")) == "pair of queens"
    assert describe_high(hv("9c 9d 9h 4s 6c")) == "three of a kind, nines"
    assert describe_high(hv("5h 6h 7h 8h 9h")) == "straight flush, nine high"
    assert describe_high(hv("Th Jh Qh Kh Ah")) == "royal flush"


def test_R22_high_value_rejects_wrong_sizes():
    for n in (0, 4, 9):
        with pytest.raises(ValueError):
            high_value(list(range(n)))


# --- R25 low hands -------------------------------------------------------------------

@settings(max_examples=600, deadline=None)
@given(hands, hands)
def test_R25_low_orders_like_brute_force(h1, h2):
    assert_same_low_order(h1, h2)


def test_R25_seeded_random_lows_agree_with_reference():
    rng = random.Random(25)
    for _ in range(5_000):
        assert_same_low_order(rng.sample(range(52), 7), rng.sample(range(52), 7))


def test_R25_low_needs_five_distinct_ranks_eight_or_lower():
    assert lv("Ac 2d 3h 4s 9c Kd Qh") is None  # only four low ranks
    assert lv("Ac 2d 3h 4s 4c 3d 2h") is None  # pairs do not count twice
    assert lv("8c 7d 6h 5s 9c") is None  # four low ranks and a 9
    assert lv("9c 7d 6h 5s 4c Kd Qh") is None  # 9 does not qualify
    assert lv("8c 7d 6h 5s 4c") is not None  # the worst qualifying low
    assert lv("Ac Ad 2h 2s 3c 3d 4h") is None


def test_R25_wheel_is_the_best_low_and_straights_flushes_ignored():
    wheel = lv("Ah 2h 3h 4h 5h")  # a straight flush for high, the best low too
    assert wheel == min(lv(h) for h in ["Ac 2d 3h 4s 6c", "8c 7d 6h 5s 4c", "Ah 2c 3d 4s 5h"])
    assert wheel == lv("Ah 2c 3d 4s 5h")
    assert describe_low(wheel) == "5-4-3-2-A low"
    assert lv("Ac 2d 3h 4s 6c") < lv("Ac 2d 3h 5s 6c") < lv("2c 3d 4h 5s 6c")


def test_R25_low_compares_highest_card_first():
    assert lv("8c 6d 4h 2s Ac") < lv("8c 7d 3h 2s Ac")  # 8-6 beats 8-7
    assert lv("7c 6d 5h 4s 3c") < lv("8c 3d 2h As 4c")  # 7 low beats any 8 low
    assert lv("8c 6d 4h 2s Ac Kd Qh") == lv("8h 6s 4d 2c Ad")  # tie, suits ignored
    assert describe_low(lv("8c 6d 4h 2s Ac Kd 9h")) == "8-6-4-2-A low"
    assert describe_low(lv("8c 7d 6h 5s 4c")) == "8-7-6-5-4 low"


def test_R25_ace_counts_low_and_hi_lo_hand_uses_cards_twice():
    cards = c("Ac 2c 3c 4c 5c Kd Kh")
    assert high_category(high_value(cards)) == 8
    assert lv("Ac 2c 3c 4c 5c Kd Kh") == lv("As 2d 3h 4s 5d")
    assert lv("Kc Ad 2h 3s 6c 7d 8h") == lv("Ad 2h 3s 6c 7d")  # best five of six lows


# --- R10 partial boards -------------------------------------------------------------

def bv(text: str):
    return board_value(c(text))


def test_R10_pair_beats_any_no_pair_board():
    assert bv("2c 2d") > bv("Ac Kd Qh Js")
    assert bv("2c 2d") > bv("Kc Qd Jh 9s")
    assert bv("3c 3d 4h") > bv("2c 2d Ah")


def test_R10_two_pair_beats_pair_and_trips_beats_two_pair():
    assert bv("3c 3d 2h 2s") > bv("Ac Ad Kh Qs")
    assert bv("2c 2d 2h 3s") > bv("Ac Ad Kh Ks")
    assert bv("2c 2d 2h") > bv("Ac Ad Kh Ks")
    assert bv("2c 2d 2h 2s") > bv("Ac Ad Ah Ks")
    assert bv("Kc Kd 5h 5s") > bv("Kh Ks 4c 4d")


def test_R10_high_cards_compare_from_the_top():
    assert bv("Ac Kd") > bv("Ah Qd Js")
    assert bv("Ac 9d") < bv("Ah Td")
    assert bv("Ac Kd 4h 2s") > bv("Ac Kd 3h 2s")
    assert bv("Qc Qd 9h") > bv("Qh Qs 8c")  # pair, then kicker


def test_R10_suits_never_count():
    assert bv("Kc") == bv("Ks")
    assert bv("Kc 7d") == bv("Ks 7h")
    assert bv("9c 9d Ah") == bv("9h 9s Ac")


def test_R10_no_straights_or_flushes_on_fewer_than_five_up_cards():
    assert bv("5h 6h 7h 8h") < bv("2c 2d")
    assert bv("5h 6h 7h 8h") == bv("5c 6d 7h 8s")
    assert bv("5h 6h 7h 8h")[0] == 0


def test_R10_five_up_cards_with_a_community_card_are_a_full_hand():
    # R17.4: a community card replacing the 6th card counts as an up card of everyone.
    assert bv("5h 6c 7h 8h 9d") > bv("Ac Ad Ah Kc")
    assert bv("5h 6c 7h 8h 9d") > bv("Kc Kd Kh 2s 3d")
    assert bv("2c 2d 2h 3s 3d") > bv("Ac Ad Ah Ks Qd")
    assert bv("Ac Ad 2h 3s 4d") > bv("Ac Kd Qh 3s 2d")


def test_R10_board_sizes_compare_sanely():
    assert bv("2c 2d") > bv("Kc Qd Jh 9s")
    assert bv("Ac Kd") > bv("Ah Qd Jc")
    assert bv("Ac") > bv("Kd Qh Js 9c")
    with pytest.raises(ValueError):
        board_value([])


# --- R7 and R24 ---------------------------------------------------------------------

def test_R7_lowest_card_is_by_rank_then_suit_ace_high():
    assert lowest_card(c("2d 2c 3c")) == c("2c")[0]
    assert lowest_card(c("Ac Kd 3s 3h")) == c("3h")[0]
    assert lowest_card(c("Ac As")) == c("Ac")[0]
    assert lowest_card(c("Ac Ks")) == c("Ks")[0]  # ace is high for the bring-in


def test_R24_highest_card_is_by_rank_then_suit_spades_highest():
    assert highest_card(c("Ac As Ah Ad")) == c("As")[0]
    assert highest_card(c("Kh Kd 2s")) == c("Kh")[0]
    assert highest_card(c("2s 3c")) == c("3c")[0]
