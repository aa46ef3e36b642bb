"""R32 with R23/R33 (domain/views.py): the proofs each reader gets open every card he
got, and nothing else: no proof, anywhere in his copies, opens a card he may not see.

A proof is found wherever it is in a copy (any ``CardProof`` value: tests/secrecy.py's
``proofs_in``), and what it opens is found by trying all 52 cards against the hand's
commitment."""

from __future__ import annotations

import random
from collections.abc import Iterator

import msgspec
import pytest
from secrecy import proofs_in

from studroom.domain import commitment, views
from studroom.domain.cards import show
from studroom.domain.events import (
    AntesCollected, CardProof, CardsDealt, Event, HandMucked, HandShown, HandStarted, LastCardsExposed,
    ShowdownStarted,
)
from studroom.domain.simulate import new_table, play_hand

PUBLIC = None


def cards_with_proofs(event: Event) -> Iterator[tuple[str, CardProof | None]]:
    """The cards a copy shows, each with the proof beside it."""
    if isinstance(event, CardsDealt):
        yield from ((d.card, d.proof) for d in event.cards if d.card is not None)
        if event.community is not None:
            yield event.community, event.community_proof
    elif isinstance(event, LastCardsExposed):
        yield from ((d.card, d.proof) for d in event.turned if d.card is not None)
    elif isinstance(event, (HandShown, HandMucked)):
        yield from zip(event.cards, event.proofs or [None] * len(event.cards))


def opened(proof: CardProof, published: commitment.Published) -> list[str]:
    """The cards the proof opens (all 52 tried; the same proof reaches many readers)."""
    key = (published.root, proof.place, proof.salt, proof.path)
    found = _OPENED.get(key)
    if found is None:
        found = _OPENED[key] = [show(c) for c in range(52)
                                if published.opens(proof.place, c, proof.salt, proof.path)]
    return found


_OPENED: dict[tuple[str, int, bytes, bytes], list[str]] = {}


class Hand:
    """What the dealer knows of one hand: who may see which card."""

    def __init__(self) -> None:
        self.published = commitment.Published("", 0)
        self.public: set[str] = set()
        self.down: dict[int, set[str]] = {}
        self.participants: set[int] = set()
        self.mucked: set[str] = set()

    def learn(self, event: Event) -> None:
        if isinstance(event, AntesCollected):
            self.published = commitment.Published(event.deck_root, event.deck_size, event.deck_format,
                                                  event.deck_leaves)
        elif isinstance(event, CardsDealt):
            for d in event.cards:
                (self.public if d.up else self.down.setdefault(d.seat, set())).add(d.card)
            if event.community:
                self.public.add(event.community)
        elif isinstance(event, ShowdownStarted):
            self.participants = set(event.order)
        elif isinstance(event, HandShown):
            self.public |= set(event.cards)
        elif isinstance(event, HandMucked):
            self.mucked |= set(event.cards)

    def may_see(self, reader: int | None) -> set[str]:
        if reader is PUBLIC:
            return self.public
        mucked = self.mucked if reader in self.participants else set()
        return self.public | self.down.get(reader, set()) | mucked


def copies_for(event: Event, reader: int | None) -> list[Event]:
    public = views.public(event)
    if reader is PUBLIC:
        return [public]
    mine = views.private(event, reader) if reader in views.owners_of_private_cards(event) else None
    return [public] + ([mine] if mine is not None else [])


@pytest.mark.parametrize("game, players, seed", [("seven_card_stud", 8, 1), ("seven_card_stud_hilo", 5, 2),
                                                 ("five_card_stud", 10, 3)])
def test_R32_R23_every_card_a_reader_gets_is_proven_and_no_proof_opens_another(game, players, seed):
    table, _ = new_table(game, players)
    rng = random.Random(seed)
    checked = {"proofs": 0, "mucks to others": 0, "folded down cards": 0}
    for _ in range(30):
        events = play_hand(table, rng, timeout_rate=0.05)
        for reader in [PUBLIC, *range(players)]:
            hand = Hand()
            for event in events:
                hand.learn(event)          # the dealer's record, as far as this event
                for copy in copies_for(event, reader):
                    allowed = hand.may_see(reader)
                    for card, proof in cards_with_proofs(copy):
                        assert card in allowed, (reader, type(copy).__name__, card)
                        assert proof is not None and opened(proof, hand.published) == [card]
                    for proof in proofs_in(copy):
                        (card,) = opened(proof, hand.published)
                        assert card in allowed, (reader, type(copy).__name__, card)
                        checked["proofs"] += 1
                    if isinstance(copy, HandMucked) and copy.cards and reader != copy.seat:
                        checked["mucks to others"] += 1
            folded = {c for seat, cards in hand.down.items() if seat != reader for c in cards} - hand.may_see(reader)
            checked["folded down cards"] += len(folded)
    assert all(checked.values()), checked


def test_R23_a_mucked_hand_goes_privately_to_the_showdowns_participants_only():
    table, _ = new_table("seven_card_stud", 5)
    rng = random.Random(11)
    mucks = 0
    for _ in range(60):
        events = play_hand(table, rng)
        showdown = next((e for e in events if isinstance(e, ShowdownStarted)), None)
        for event in events:
            if isinstance(event, HandMucked):
                assert showdown is not None and event.participants == showdown.order
                assert views.owners_of_private_cards(event) == sorted(showdown.order)
                assert views.public(event).cards == [] and views.public(event).proofs == []
                for seat in range(5):
                    copy = views.private(event, seat)
                    assert (copy == event) if seat in showdown.order else copy is None
                mucks += 1
    assert mucks


def test_R32_a_seeded_hands_events_never_carry_the_seed_publicly():
    table, _ = new_table("seven_card_stud", 4)
    events = play_hand(table, random.Random(2))
    started = events[0]
    assert isinstance(started, HandStarted) and started.seed
    for event in events:
        for reader in [PUBLIC, *range(4)]:
            for copy in copies_for(event, reader):
                assert started.seed.encode() not in msgspec.json.encode(copy)
