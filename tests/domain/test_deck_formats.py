"""R32, R23, R33: the two formats of the deck commitment (domain/commitment.py).  Hands
stored in format 1 (the Merkle root, tests/fixtures/deck_v1/) still audit clean, and a
hand committed in format 1 before an upgrade is dealt to its end in format 1; new hands
are format 2 (the leaves published); published leaves that do not hold together are
named; no two cards' proofs collide, and nothing public opens a hidden card."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studroom.domain import commitment, snapshot, views
from studroom.domain.audit import audit, merged
from studroom.domain.cards import CARD_TEXT, DECK_SIZE
from studroom.domain.commands import Muck, Show
from studroom.domain.deck import CommittedDeck, mixed_key
from studroom.domain.errors import MUST_SHOW, DomainError
from studroom.domain.events import (
    AntePosted, AntesCollected, CardsDealt, Event, HandStarted, TableEvent, TurnStarted,
)
from studroom.domain.simulate import last_turn, new_table, play_hand, random_move
from studroom.domain.table import Table

FORMAT_1 = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "deck_v1").glob("*.json"))


def stored(path: Path) -> list[Event]:
    return list(msgspec.json.decode(path.read_bytes(), type=list[TableEvent]))


def seen_by(events: list[Event], seat: int) -> list[Event]:
    copies = [(v, views.public(e)) for v, e in enumerate(events)]
    copies += [(v, copy) for v, e in enumerate(events) if (copy := views.private(e, seat)) is not None]
    return merged(copies)


def clean(events: list[Event]) -> bool:
    return all(a.fair for a in audit(events))


@pytest.mark.parametrize("path", FORMAT_1, ids=lambda p: p.stem)
def test_R32_hands_stored_in_format_1_audit_clean_however_they_are_read(path):
    events = stored(path)
    collected = [e for e in events if isinstance(e, AntesCollected)]
    assert collected and all(e.deck_format == 1 and e.deck_size == DECK_SIZE for e in collected)
    record = audit(events)
    assert all(a.fair for a in record) and all(a.cards > 0 and a.proofs > 0 for a in record)  # the seed, again
    assert clean([views.public(e) for e in events])
    seats = {d.seat for e in events if isinstance(e, CardsDealt) for d in e.cards}
    assert all(clean(seen_by(events, seat)) for seat in seats)


@pytest.mark.parametrize("path", FORMAT_1, ids=lambda p: p.stem)
def test_R32_a_changed_card_of_a_format_1_hand_is_still_named(path):
    events = stored(path)
    i = next(i for i, e in enumerate(events) if isinstance(e, CardsDealt) and any(d.up for d in e.cards))
    k, d = next((k, d) for k, d in enumerate(events[i].cards) if d.up)
    forged = "As" if d.card != "As" else "Ks"
    events[i] = msgspec.structs.replace(events[i], cards=events[i].cards[:k] + [
        msgspec.structs.replace(d, card=forged)] + events[i].cards[k + 1 :])
    assert any(f"{forged} does not open the commitment at place {d.proof.place}" in f
               for a in audit([views.public(e) for e in events]) for f in a.findings)


def finish(table: Table, turn_from: list[Event], rng: random.Random) -> list[Event]:
    """The hand in progress played to its end with random legal moves."""
    events: list[Event] = []
    turn = last_turn(turn_from)
    while (hand := table.hand) is not None:
        assert turn is not None
        command = random_move(hand, turn, rng)
        try:
            new = table.execute(command)
        except DomainError as refused:          # R22: the last claimant shows
            assert refused.code == MUST_SHOW and isinstance(command, Muck)
            new = table.execute(Show(seat=command.seat))
        events += new
        turn = last_turn(new, turn)
    return events


@pytest.mark.parametrize("restore", ["replayed", "from a snapshot"])
def test_R32_a_hand_committed_in_format_1_is_dealt_to_its_end_in_format_1(restore):
    """An upgrade in the middle of a hand: the cards still to come open the Merkle root
    published before it."""
    events = stored(FORMAT_1[[p.stem for p in FORMAT_1].index("seven_card_stud_3_players")])
    last_hand = max(i for i, e in enumerate(events) if isinstance(e, HandStarted))
    dealt = next(i for i, e in enumerate(events) if i > last_hand and isinstance(e, CardsDealt))
    cut = next(i for i, e in enumerate(events) if i > dealt and isinstance(e, TurnStarted)) + 1
    table = Table.replay(events[:cut])
    if restore == "from a snapshot":
        table = snapshot.restore(snapshot.capture(table))
    rest = finish(table, events[:cut], random.Random(5))
    later = [d for e in rest if isinstance(e, CardsDealt) for d in e.cards]
    assert later and all(len(d.proof.path) > 0 for d in later)              # Merkle paths
    assert clean(events[last_hand:cut] + rest)
    assert clean([views.public(e) for e in events[last_hand:cut] + rest])


def test_R32_new_hands_commit_in_format_2_to_the_cards_they_can_reach():
    table, _ = new_table("five_card_stud", 3)
    events = play_hand(table, random.Random(3))
    (collected,) = [e for e in events if isinstance(e, AntesCollected)]
    assert collected.deck_format == commitment.FORMAT == 2 and collected.deck_size == 3 * 5 + 3
    assert len(collected.deck_leaves) == 32 * collected.deck_size and clean(events)
    assert all(d.proof.path == b"" for e in events if isinstance(e, CardsDealt) for d in e.cards)


@pytest.mark.parametrize("forge, finding", [
    (lambda e: msgspec.structs.replace(e, deck_leaves=bytes(32) + e.deck_leaves[32:]),
     "the published leaves do not make the deck's root (format 2)"),
    (lambda e: msgspec.structs.replace(e, deck_format=7), "the deck was committed in format 7, which no one knows"),
    (lambda e: msgspec.structs.replace(e, deck_size=e.deck_size - 1),
     "the published leaves do not make the deck's root (format 2)"),
])
def test_R32_published_leaves_that_do_not_hold_together_are_named(forge, finding):
    table, _ = new_table("seven_card_stud", 2)
    events = [forge(e) if isinstance(e, AntesCollected) else e for e in play_hand(table, random.Random(1))]
    for stream in (events, [views.public(e) for e in events]):
        (checked,) = audit(stream)
        assert f"hand 1: {finding}" in checked.findings
    (record,) = audit(events)
    derived = "hand 1: the deck derived from the seed is not the one committed to"
    assert (derived in record.findings) == ("format 2" in finding)     # the leaves differ from the seed's


# ------------------------------------------------------------------ properties

KEYS = st.binary(min_size=1, max_size=32)


@settings(max_examples=40, deadline=None)
@given(KEYS, st.sampled_from(commitment.FORMATS), st.integers(2, DECK_SIZE))
def test_R32_no_two_cards_proofs_collide_and_each_opens_one_card_at_one_place(key, fmt, span):
    deck = CommittedDeck(key)
    deck.fix(fmt, span)
    published = commitment.Published(deck.root(), deck.span(), deck.format(), deck.leaves())
    top = deck.order()[:span]
    proofs = [deck.proof(card) for card in top]
    assert len({(p.place, p.salt) for p in proofs}) == span and len({p.salt for p in proofs}) == span
    if fmt == commitment.LEAVES:
        assert len({deck.leaves()[32 * p : 32 * p + 32] for p in range(span)}) == span
    for proof in proofs[:4] + proofs[-2:]:              # every card tried at every place: too slow for all
        opened = [(place, c) for place in range(span) for c in range(DECK_SIZE)
                  if published.opens(place, c, proof.salt, proof.path)]
        assert opened == [(proof.place, top[proof.place])]


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["seven_card_stud", "seven_card_stud_hilo", "five_card_stud"]), st.integers(2, 8),
       st.integers(0, 2**32))
def test_R23_R33_nothing_public_opens_a_hidden_card(game, players, seed):
    """The public copies carry no salt of a hidden card (raw or base64), and no salt
    they carry opens a hidden place's published leaf to any card."""
    table, _ = new_table(game, players)
    events = play_hand(table, random.Random(seed))
    public = [views.public(e) for e in events]
    started = events[0]
    assert isinstance(started, HandStarted) and started.seed is not None
    collected = next(e for e in events if isinstance(e, AntesCollected))
    entropy = [bytes.fromhex(e.entropy) for e in events if isinstance(e, AntePosted) and e.entropy]
    deck = CommittedDeck(mixed_key(bytes.fromhex(started.seed), entropy))
    deck.fix(collected.deck_format, collected.deck_size)
    shown = {text for e in public for text in _cards_in(e)}
    hidden = [p for p, card in enumerate(deck.order()[: deck.span()]) if CARD_TEXT[card] not in shown]
    assert hidden
    data = b"".join(msgspec.json.encode(e) for e in public)
    salts_seen = {proof.salt for e in public for proof in _proofs_in(e)}
    leaves = collected.deck_leaves
    for place in hidden:
        salt = deck.proof(deck.order()[place]).salt
        assert salt not in data and base64.b64encode(salt) not in data and salt not in salts_seen
        leaf = leaves[32 * place : 32 * place + 32]
        assert not any(commitment.leaf(place, c, s) == leaf for s in salts_seen for c in range(DECK_SIZE))


def _cards_in(event: Event) -> list[str]:
    if isinstance(event, CardsDealt):
        return [d.card for d in event.cards if d.card] + ([event.community] if event.community else [])
    return [c for c in getattr(event, "cards", []) if isinstance(c, str)] + [
        d.card for d in getattr(event, "turned", []) if d.card]


def _proofs_in(event: Event) -> list:
    if isinstance(event, CardsDealt):
        return [d.proof for d in event.cards if d.proof] + ([event.community_proof] if event.community_proof else [])
    return list(getattr(event, "proofs", [])) + [d.proof for d in getattr(event, "turned", []) if d.proof]

