"""The hand's deck (R32): the order, key and salts docs/design/fair-dealing.md states,
made again here from the note's words, and the committed deck's proofs."""

from __future__ import annotations

import copy
import hashlib
import struct

from hypothesis import given
from hypothesis import strategies as st

from studroom.domain import commitment
from studroom.domain.cards import ALL_CARDS, CARD_TEXT, DECK_SIZE
from studroom.domain.deck import CommittedDeck, mixed_key, salts, scripted_key, seed_hash, seeded_order, shuffled

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


@given(SEEDS, st.lists(st.binary(min_size=1, max_size=8), max_size=3))
def test_R32_every_place_of_a_committed_deck_opens_to_its_card_only(seed, entropy):
    deck = CommittedDeck(seed)
    for e in entropy:
        deck.mix(e)
    order, root = deck.order(), deck.root()
    assert order == seeded_order(mixed_key(seed, entropy))
    for place, card in enumerate(order):
        proof = deck.proof(card)
        assert proof is not None and proof.place == place
        assert commitment.opens(root, DECK_SIZE, place, card, proof.salt, proof.path)
        other = order[(place + 1) % 52]
        assert not commitment.opens(root, DECK_SIZE, place, other, proof.salt, proof.path)


def test_R32_a_scripted_deck_commits_to_its_listed_cards():
    listed = [5, 17, 3, 40, 22]
    deck = CommittedDeck(scripted_key([CARD_TEXT[c] for c in listed]), listed)
    assert deck.size() == 5 and deck.cards(0, 5) == listed
    for place, card in enumerate(listed):
        proof = deck.proof(card)
        assert commitment.opens(deck.root(), 5, place, card, proof.salt, proof.path)
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
