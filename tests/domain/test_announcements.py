"""Dealer announcements of up cards (R30, R31; seed 003 §3)."""

from __future__ import annotations

import random

import msgspec
import pytest

from studroom.domain.announcements import Announcement, announce, describe, render
from studroom.domain.cards import parse_many


def say(text: str, lang: str = "en"):
    return announce(parse_many(text.split()), lang)


def test_R30_nothing_announced_for_a_single_up_card():
    assert say("Kc") is None
    assert say("Kc", "de") is None
    assert describe([]) is None


def test_R30_pair_announced_from_second_up_card():
    assert say("Kc Kd") == "pair of kings"
    assert say("Kc Kd", "de") == "Ein Paar Könige"
    assert say("Kc Qd") is None


def test_R30_pair_trips_quads_on_later_streets():
    assert say("9c 9d 9h") == "three nines"
    assert say("9c 9d 9h", "de") == "Drilling Neuner"
    assert say("8c 8d 8h 8s") == "four eights"
    assert say("8c 8d 8h 8s", "de") == "Poker Achter"
    assert say("Ac Ad 7h") == "pair of aces"
    assert say("2c 7d 2h 4s") == "pair of twos"


def test_R30_two_pair_names_the_higher_pair():
    assert say("Jc 3d Jh 3s") == "two pair, jacks"
    assert say("Jc 3d Jh 3s", "de") == "Zwei Paare, Buben"
    assert describe(parse_many("3c Jd 3h Js".split())) == Announcement(kind="two_pair", rank=9)


def test_R30_every_rank_has_english_and_german_plural():
    en = ["twos", "threes", "fours", "fives", "sixes", "sevens", "eights", "nines",
          "tens", "jacks", "queens", "kings", "aces"]
    de = ["Zweier", "Dreier", "Vierer", "Fünfer", "Sechser", "Siebener", "Achter",
          "Neuner", "Zehner", "Buben", "Damen", "Könige", "Asse"]
    for r in range(13):
        pair = [r * 4, r * 4 + 1]
        assert announce(pair) == f"pair of {en[r]}"
        assert announce(pair, "de") == f"Ein Paar {de[r]}"


def test_R30_five_up_cards_still_announce_made_hands_but_no_draws():
    assert say("Kc Kd Kh 7s 7c") == "three kings"
    assert say("5h 6h 7h 8h Kc") is None
    assert say("5h 6h 7h 8h 8c") == "pair of eights"


def test_R31_open_ended_and_inside_straight_draws():
    assert say("5c 6d 7h 8s") == "possible straight"
    assert say("5c 6d 8h 9s") == "possible straight"
    assert say("Ac 2d 3h 4s") == "possible straight"  # ace low
    assert say("Ac Kd Qh Ts") == "possible straight"  # ace high, inside
    assert say("5c 6d 7h 8s", "de") == "Möglicher Straight"
    assert say("Qc Kd Ah 2s") is None  # no wrap-around
    assert say("5c 6d 7h Ts") is None  # two cards short


def test_R31_flush_draw():
    assert say("Kh 9h 4h 2h") == "possible flush"
    assert say("Kh 9h 4h 2h", "de") == "Möglicher Flush"
    assert say("Kh 9h 4h 2c") is None


def test_R31_straight_flush_draw_announces_both():
    assert say("5h 6h 7h 8h") == "possible straight, possible flush"
    assert say("Ah 2h 3h 5h") == "possible straight, possible flush"
    assert say("Th Jh Qh Ah") == "possible straight, possible flush"  # royal draw
    assert say("5h 6h 7h 8h", "de") == "Möglicher Straight, möglicher Flush"
    assert describe(parse_many("5h 6h 7h 8h".split())) == Announcement(draws=("straight", "flush"))


def test_R31_draws_only_with_exactly_four_up_cards():
    assert say("5h 6h 7h") is None
    assert say("Kh 9h 4h") is None


def test_R31_nothing_to_say():
    assert say("Kc 9d 4h 2s") is None
    assert say("Kc 9d 4h 2s", "de") is None


def test_R31_made_hand_and_draw_never_coexist_with_four_up_cards():
    rng = random.Random(31)
    for _ in range(3_000):
        a = describe(rng.sample(range(52), 4))
        if a is not None:
            assert a.kind is None or a.draws == ()


def test_R30_announcement_is_a_language_neutral_event_payload():
    a = describe(parse_many("Qc Qd".split()))
    assert a == Announcement(kind="pair", rank=10, draws=())
    wire = msgspec.json.encode(a)
    back = msgspec.json.decode(wire, type=Announcement)
    assert back == a
    assert render(back, "en") == "pair of queens"
    assert render(back, "de") == "Ein Paar Damen"


def test_R30_unknown_language_is_refused():
    with pytest.raises(ValueError):
        render(Announcement(kind="pair", rank=0), "fr")
