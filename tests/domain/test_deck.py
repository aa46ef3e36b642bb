"""The seeded deck (R32): dealt as it is shuffled, yet always the same order for a seed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from studroom.domain.cards import ALL_CARDS, DECK_SIZE
from studroom.domain.deck import SeededDeck, deck_from_seed, shuffled

SEEDS = st.binary(min_size=1, max_size=32)


@given(SEEDS, st.lists(st.integers(1, 12), max_size=8))
def test_R32_dealing_piece_by_piece_gives_the_whole_decks_order(seed, pieces):
    deck = SeededDeck(seed)
    dealt: list[int] = []
    for count in pieces:
        count = min(count, DECK_SIZE - len(dealt))
        dealt += deck.cards(len(dealt), count)
    assert dealt == deck_from_seed(seed)[: len(dealt)]
    assert sorted(deck_from_seed(seed)) == list(ALL_CARDS)          # a permutation


@given(SEEDS)
def test_R32_the_deck_is_the_seeds_shuffle_read_from_its_last_position(seed):
    assert deck_from_seed(seed) == shuffled(ALL_CARDS, seed, b"deck")[::-1]


def test_R32_different_seeds_give_different_decks():
    decks = {tuple(deck_from_seed(bytes([i]) * 32)) for i in range(50)}
    assert len(decks) == 50
