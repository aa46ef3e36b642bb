"""R32: a hand's revealed seed proves every card, from the public view alone."""

import random

import msgspec

from studroom.domain import views
from studroom.domain.audit import audit_hand
from studroom.domain.events import CardsDealt, DealtCard, HandShown
from studroom.domain.simulate import new_table, play_hand


def test_R32_public_events_of_random_hands_audit_as_fair():
    table, _ = new_table("seven_card_stud", 8)
    rng = random.Random(5)
    for _ in range(20):                        # eight players: R17 reshuffles happen too
        events = play_hand(table, rng)
        audit = audit_hand([views.public(e) for e in events])
        assert audit.fair, audit.findings


def test_R32_a_tampered_card_is_caught():
    table, _ = new_table("seven_card_stud", 3)
    events = play_hand(table, random.Random(6))
    i = next(i for i, e in enumerate(events) if isinstance(e, CardsDealt) and e.street == 1)
    first = events[i].cards[0]
    forged = "As" if first.card != "As" else "Ks"
    events[i] = msgspec.structs.replace(events[i], cards=[DealtCard(first.seat, forged, True)] + events[i].cards[1:])
    audit = audit_hand(events)
    assert not audit.fair and "street 1" in audit.findings[0]


def test_R32_a_shown_hand_that_was_not_dealt_is_caught():
    table, _ = new_table("seven_card_stud", 2)
    rng = random.Random(8)
    events = play_hand(table, rng)
    while not any(isinstance(e, HandShown) for e in events):
        events = play_hand(table, rng)
    i = next(i for i, e in enumerate(events) if isinstance(e, HandShown))
    cards = list(events[i].cards)
    cards[0], cards[1] = cards[1], cards[0]
    events[i] = msgspec.structs.replace(events[i], cards=cards)
    assert not audit_hand(events).fair
