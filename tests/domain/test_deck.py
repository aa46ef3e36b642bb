"""The hand's deck (R32): the order, key and salts docs/design/fair-dealing.md states,
made again here from the note's words, and the committed deck's proofs."""

from __future__ import annotations

import copy
import hashlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studroom.domain import commitment
from studroom.domain.cards import ALL_CARDS, CARD_TEXT, DECK_SIZE
from studroom.domain.deck import (
    CommittedDeck, mixed_key, reach, salts, scripted_key, seed_hash, seeded_order, shuffled,
)
from studroom.domain.games import GAMES

SEEDS = st.binary(min_size=1, max_size=32)


def words(key: bytes, label: bytes):
    """Section 2.3: the stream's 32-bit big-endian words, block after block."""
    i = 0
    while True:
        yield from struct.unpack(">8I", hashlib.sha256(key + label + i.to_bytes(8, "big")).digest())
        i += 1


def note_order(key: bytes) -> list[int]:
    """Sections 2.4 and 2.5, as written."""
    cards, stream = list(range(52)), words(key, b"deck")
    for i in range(51, 0, -1):
        n = i + 1
        w = next(stream)
        while w >= 2**32 - (2**32 % n):
            w = next(stream)
        j = w % n
        cards[i], cards[j] = cards[j], cards[i]
    return [cards[51 - p] for p in range(52)]


@given(SEEDS)
def test_R32_the_deck_is_the_documented_shuffle_read_from_its_last_position(seed):
    order = seeded_order(seed)
    assert order == note_order(seed) == shuffled(ALL_CARDS, seed, b"deck")[::-1]
    assert sorted(order) == list(ALL_CARDS)


def test_R32_different_seeds_give_different_decks():
    decks = {tuple(seeded_order(bytes([i]) * 32)) for i in range(50)}
    assert len(decks) == 50


def test_R32_the_seed_hash_is_its_sha256():
    assert seed_hash(b"\x01" * 32) == hashlib.sha256(b"\x01" * 32).hexdigest()


@given(SEEDS, st.lists(st.binary(min_size=1, max_size=32), min_size=1, max_size=4))
def test_R32_entropy_makes_the_documented_key(seed, entropy):
    assert mixed_key(seed, []) == seed
    expected = hashlib.sha256(seed + b"".join(hashlib.sha256(e).digest() for e in entropy)).digest()
    assert mixed_key(seed, entropy) == expected
    if entropy != entropy[::-1]:
        assert mixed_key(seed, entropy[::-1]) != expected         # the order counts


def test_R32_salts_are_the_shake256_stream_cut_in_16_bytes():
    key = b"k" * 32
    stream = hashlib.shake_256(key + b"salt").digest(16 * 52)
    assert salts(key, 52) == [stream[16 * p : 16 * p + 16] for p in range(52)]
    assert len(set(salts(key, 52))) == 52


def test_R32_a_scripted_decks_key_is_the_hash_of_its_cards():
    assert scripted_key(["As", "Kd"]) == hashlib.sha256(b"scripted:As,Kd").digest()


def published(deck: CommittedDeck) -> commitment.Published:
    """What the hand's AntesCollected publishes of ``deck``."""
    return commitment.Published(deck.root(), deck.span(), deck.format(), deck.leaves())


@pytest.mark.parametrize("fmt", commitment.FORMATS)
@given(seed=SEEDS, entropy=st.lists(st.binary(min_size=1, max_size=8), max_size=3))
def test_R32_every_place_of_a_committed_deck_opens_to_its_card_only(fmt, seed, entropy):
    deck = CommittedDeck(seed)
    for e in entropy:
        deck.mix(e)
    deck.fix(fmt, DECK_SIZE)
    order, public = deck.order(), published(deck)
    assert order == seeded_order(mixed_key(seed, entropy)) and public.sound
    for place, card in enumerate(order):
        proof = deck.proof(card)
        assert proof is not None and proof.place == place and (proof.path == b"") == (fmt == commitment.LEAVES)
        assert public.opens(place, card, proof.salt, proof.path)
        other = order[(place + 1) % 52]
        assert not public.opens(place, other, proof.salt, proof.path)


def test_R32_format_2_is_the_documented_leaves_and_the_hash_over_them():
    """Section 3 of the design note, made again from its words."""
    deck = CommittedDeck(b"s" * 32)
    deck.fix(commitment.LEAVES, 18)
    order, key = deck.order(), deck.key()
    stream = hashlib.shake_256(key + b"salt").digest(16 * 18)
    leaves = b"".join(hashlib.sha256(b"\x00" + bytes([p]) + CARD_TEXT[order[p]].encode() + stream[16 * p : 16 * p + 16])
                      .digest() for p in range(18))
    assert deck.leaves() == leaves and deck.span() == 18
    assert deck.root() == hashlib.sha256(b"\x02" + leaves).hexdigest()
    assert deck.proof(order[17]).salt == stream[16 * 17 :] and deck.proof(order[18]) is None   # beyond the span


def test_R32_format_1_is_the_merkle_root_of_the_same_leaves():
    v1, v2 = CommittedDeck(b"s" * 32), CommittedDeck(b"s" * 32)
    v1.fix(commitment.MERKLE, DECK_SIZE)
    v2.fix(commitment.LEAVES, DECK_SIZE)
    leaves = [v2.leaves()[32 * p : 32 * p + 32] for p in range(52)]
    assert v1.leaves() == b"" and v1.root() == commitment.levels(leaves)[-1][0].hex()
    assert v1.proof(v1.order()[5]).salt == v2.proof(v2.order()[5]).salt


@pytest.mark.parametrize("game, players, places", [("seven_card_stud", 2, 18), ("seven_card_stud", 6, 46),
                                                   ("seven_card_stud", 7, 53), ("five_card_stud", 2, 13),
                                                   ("five_card_stud", 10, 53)])
def test_R32_a_hand_reaches_its_players_cards_and_the_burns(game, players, places):
    """What format 2 commits to: every card a hand can deal (R17 needs the whole deck)."""
    assert reach(GAMES[game], players) == places
    deck = CommittedDeck(b"seed")
    deck.fix(commitment.LEAVES, places)
    assert deck.span() == min(places, DECK_SIZE) and len(deck.leaves()) == 32 * deck.span()


def test_R32_a_scripted_deck_commits_to_its_listed_cards():
    listed = [5, 17, 3, 40, 22]
    deck = CommittedDeck(scripted_key([CARD_TEXT[c] for c in listed]), listed)
    deck.fix(commitment.FORMAT, 18)
    assert deck.size() == deck.span() == 5 and deck.cards(0, 5) == listed
    for place, card in enumerate(listed):
        proof = deck.proof(card)
        assert published(deck).opens(place, card, proof.salt, proof.path)
    assert deck.proof(0) is None                                # not in this deck


def test_R32_a_live_dealers_deck_commits_to_nothing():
    deck = CommittedDeck(b"", [])
    assert deck.size() == 0 and deck.root() == "" and deck.proof(7) is None


def test_R32_a_copy_of_a_worked_out_deck_gives_the_same_proofs():
    deck = CommittedDeck(b"seed")
    deck.root()
    twin = copy.deepcopy(deck)
    assert twin.root() == deck.root()
    assert [twin.proof(c) for c in deck.order()] == [deck.proof(c) for c in deck.order()]


@given(SEEDS, st.integers(0, DECK_SIZE))
def test_R32_the_top_of_a_deck_shuffled_no_further_is_the_top_of_the_whole_shuffle(seed, count):
    """A hand's span is shuffled first and alone; the cards below come from the same words."""
    assert seeded_order(seed, count) == seeded_order(seed)[:count]
    deck = CommittedDeck(seed)
    deck.fix(commitment.LEAVES, 18)
    assert deck.cards(0, 18) == seeded_order(seed)[:18] and deck.cards(18, 34) == seeded_order(seed)[18:]
