"""A hand as each player may see it afterwards (R23, R33): his own cards, everything
public, at his showdown every hand that stayed to the end (mucked ones included),
never another player's folded cards, never the seed or the burns."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from studroom.domain.events import (
    CardsDealt,
    Event,
    HandMucked,
    HandShown,
    HandStarted,
    ShowdownStarted,
)
from studroom.domain.simulate import new_table, play_hand, top_up
from studroom.domain.hands import spans
from studroom.domain.seen import seen_by


def _hands(game: str, players: int, count: int, seed: int) -> Iterator[list[Event]]:
    rng = random.Random(seed)
    table, events = new_table(game, players, stack=400)
    for _ in range(count):
        events += top_up(table, 400)
        events += play_hand(table, rng, timeout_rate=0.02)
    for span in spans(events):
        if span.end is not None and not span.cancelled:
            yield events[span.start:span.end]


def _cards_shown(events: Sequence[Event]) -> set[str]:
    """Every card text a copy of the hand carries, wherever it is."""
    found: set[str] = set()
    for e in events:
        if isinstance(e, CardsDealt):
            found |= {d.card for d in e.cards if d.card} | set(e.burned) | set(e.stub)
            found |= {e.community} if e.community else set()
        elif isinstance(e, (HandShown, HandMucked)):
            found |= set(e.cards)
        elif isinstance(e, HandStarted):
            found |= set(e.deck)
    return found


def _may_see(hand: Sequence[Event], seat: int) -> set[str]:
    """R23: up cards, community cards, shown hands, his own cards, and mucked hands when
    he took part in the showdown."""
    order = next((e.order for e in hand if isinstance(e, ShowdownStarted)), [])
    allowed: set[str] = set()
    for e in hand:
        if isinstance(e, CardsDealt):
            allowed |= {d.card for d in e.cards if d.card and (d.up or d.seat == seat)}
            allowed |= {e.community} if e.community else set()
        elif isinstance(e, HandShown) or (isinstance(e, HandMucked) and seat in order):
            allowed |= set(e.cards)
    return allowed


def test_R23_R33_no_history_shows_another_players_folded_or_mucked_cards_it_may_not() -> None:
    checked = mucks_seen = mucks_kept = 0
    for game, players, seed in (("seven_card_stud", 6, 1), ("seven_card_stud_hilo", 5, 2), ("five_card_stud", 8, 3)):
        for hand in _hands(game, players, 60, seed):
            started = hand[0]
            assert isinstance(started, HandStarted)
            order = next((e.order for e in hand if isinstance(e, ShowdownStarted)), [])
            for s in started.seats:
                seen = seen_by(hand, s.seat)
                assert _cards_shown(seen) <= _may_see(hand, s.seat)
                assert isinstance(seen[0], HandStarted) and seen[0].seed is None and not seen[0].deck
                for mucked in (e for e in seen if isinstance(e, HandMucked)):
                    if s.seat in order:
                        assert mucked.cards, "R23: a showdown's participant sees the mucked hand"
                        mucks_seen += 1
                    else:
                        assert not mucked.cards
                        mucks_kept += 1
                checked += 1
    assert checked > 500 and mucks_seen and mucks_kept


def _proofs_without_cards(events: Sequence[Event]) -> int:
    """Proofs (R32) that travel without the card they open: a proof tells the card."""
    count = 0
    for e in events:
        if isinstance(e, CardsDealt):
            count += sum(d.card is None and d.proof is not None for d in e.cards)
            count += e.community is None and e.community_proof is not None
        elif isinstance(e, HandMucked):
            count += not e.cards and bool(e.proofs)
    return count


def test_R23_R32_a_history_carries_the_proof_of_every_card_it_shows_and_of_no_other() -> None:
    for hand in _hands("seven_card_stud_hilo", 6, 30, 4):
        for s in hand[0].seats:  # type: ignore[attr-defined]
            seen = seen_by(hand, s.seat)
            assert _proofs_without_cards(seen) == 0
            dealt = [d for e in seen if isinstance(e, CardsDealt) for d in e.cards if d.card is not None]
            assert all(d.proof is not None for d in dealt)
            mucked = [e for e in seen if isinstance(e, HandMucked) and e.cards]
            assert all(len(e.proofs) == len(e.cards) for e in mucked)


def test_R23_his_own_down_cards_are_in_his_history_and_nobody_elses() -> None:
    hand = next(_hands("seven_card_stud", 4, 5, 7))
    for seat in {d.seat for e in hand if isinstance(e, CardsDealt) for d in e.cards}:
        own = {d.card for e in hand if isinstance(e, CardsDealt) for d in e.cards if d.seat == seat and not d.up}
        assert own <= _cards_shown(seen_by(hand, seat))
        others = {s for s in {d.seat for e in hand if isinstance(e, CardsDealt) for d in e.cards} if s != seat}
        for other in others:
            assert not own & _cards_shown(seen_by(hand, other)) - _may_see(hand, other)


def test_R33_the_public_copy_carries_no_down_card() -> None:
    hand = next(_hands("seven_card_stud_hilo", 3, 3, 11))
    public = seen_by(hand, None)
    downs = {d.card for e in hand if isinstance(e, CardsDealt) for d in e.cards if not d.up}
    shown = {c for e in hand if isinstance(e, HandShown) for c in e.cards}
    assert not (_cards_shown(public) & downs) - shown
