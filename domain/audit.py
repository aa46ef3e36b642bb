"""Proving a hand was dealt fairly (rule R32), for disputes.

Given a hand's events as stored (the dealer's view) or as published (the public view:
the seed is revealed by the last event), recompute the deck from the revealed seed,
check it against the commitment published before the first card, and check that every
card shown or dealt face up came off that deck at its place in the real order of
dealing.  Reshuffles (R17) are recomputed from the seed the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from .cards import parse_many, show
from .deck import commitment, deck_from_seed, reshuffle_label, shuffled
from .events import CardsDealt, Event, HandEnded, HandShown, HandStarted


class Audit(msgspec.Struct, frozen=True):
    hand_no: int
    fair: bool
    findings: list[str]


def audit_hand(events: Sequence[Event]) -> Audit:
    """Check one hand (from its HandStarted to its HandEnded)."""
    started = next((e for e in events if isinstance(e, HandStarted)), None)
    ended = next((e for e in events if isinstance(e, HandEnded)), None)
    if started is None or ended is None:
        return Audit(hand_no=-1, fair=False, findings=["the hand is not complete"])
    findings: list[str] = []
    if ended.seed is None:
        return Audit(hand_no=started.hand_no, fair=False, findings=["no seed was revealed"])
    seed = bytes.fromhex(ended.seed)
    if commitment(seed) != started.commitment:
        findings.append("the revealed seed does not match the published commitment")
    deck, pos = deck_from_seed(seed), 0
    burns: list[int] = []
    owner_of: dict[int, list[int]] = {}
    for e in events:
        if not isinstance(e, CardsDealt):
            continue
        if e.reshuffled:
            deck, pos = shuffled(deck[pos:] + burns, seed, reshuffle_label(e.street)), 0
            burns = []
        burn = 1 if e.street else 0           # R9: one burn before every later street
        expected = deck[pos : pos + burn + len(e.cards) + (e.community is not None)]
        burns += expected[:burn]
        pos += len(expected)
        dealt = expected[burn:]
        if e.community is not None and show(dealt[-1]) != e.community:
            findings.append(f"street {e.street}: community card {e.community} is not the deck's {show(dealt[-1])}")
        for d, card in zip(e.cards, dealt):
            owner_of.setdefault(d.seat, []).append(card)
            if d.card is not None and d.card != show(card):
                findings.append(f"street {e.street}: seat {d.seat} got {d.card}, the deck says {show(card)}")
    for e in events:
        if isinstance(e, HandShown) and parse_many(e.cards) != owner_of.get(e.seat):
            findings.append(f"seat {e.seat} showed {e.cards}, the deck dealt him otherwise")
    return Audit(hand_no=started.hand_no, fair=not findings, findings=findings)
