"""The Merkle commitment (R32, domain/commitment.py): RFC 6962's tree hash, paths that
open exactly one leaf, and nothing else opening."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from studroom.domain import commitment
from studroom.domain.cards import CARD_TEXT

SIZES = st.integers(1, 52)


def rfc6962_root(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) of RFC 6962 section 2.1, recursively (the leaves already hashed)."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + rfc6962_root(leaves[:k]) + rfc6962_root(leaves[k:])).digest()


def deck_of(size: int) -> tuple[list[int], list[bytes], list[list[bytes]]]:
    cards = [(7 * p + 3) % 52 for p in range(size)]
    salts = [hashlib.sha256(bytes([p])).digest()[:16] for p in range(size)]
    return cards, salts, commitment.levels(commitment.leaves(cards, salts))


@given(SIZES)
def test_R32_the_root_is_rfc_6962s_merkle_tree_hash(size):
    cards, salts, tree = deck_of(size)
    leaves = [hashlib.sha256(b"\x00" + bytes([p]) + CARD_TEXT[c].encode() + salts[p]).digest()
              for p, c in enumerate(cards)]
    assert tree[0] == leaves and tree[-1] == [rfc6962_root(leaves)]


@given(SIZES)
def test_R32_each_path_opens_its_place_and_no_other(size):
    cards, salts, tree = deck_of(size)
    root = tree[-1][0].hex()
    for place, card in enumerate(cards):
        path = commitment.path(tree, place)
        assert commitment.opens(root, size, place, card, salts[place], path)
        for other in {place - 1, place + 1} & set(range(size)):
            assert not commitment.opens(root, size, other, card, salts[place], path)


def test_R32_a_changed_card_salt_path_or_root_opens_nothing():
    cards, salts, tree = deck_of(52)
    root = tree[-1][0].hex()
    path = commitment.path(tree, 9)
    assert commitment.opens(root, 52, 9, cards[9], salts[9], path)
    assert not commitment.opens(root, 52, 9, (cards[9] + 1) % 52, salts[9], path)
    assert not commitment.opens(root, 52, 9, cards[9], bytes(16), path)
    assert not commitment.opens(root, 52, 9, cards[9], salts[9], path[:-32])
    assert not commitment.opens(root, 52, 9, cards[9], salts[9], path + bytes(32))
    assert not commitment.opens(root, 52, 9, cards[9], salts[9], bytes(32) + path[32:])
    assert not commitment.opens("00" * 32, 52, 9, cards[9], salts[9], path)
    assert not commitment.opens(root, 52, 52, cards[9], salts[9], path)


# ------------------------------------------------------------------ format 2: the leaves published


def published_of(size: int) -> tuple[list[int], list[bytes], commitment.Published]:
    cards, salts, tree = deck_of(size)
    joined = b"".join(tree[0])
    root = hashlib.sha256(b"\x02" + joined).hexdigest()             # the note's words, not the module's
    return cards, salts, commitment.Published(root, size, commitment.LEAVES, joined)


@given(SIZES)
def test_R32_format_2_opens_each_place_with_its_salt_alone_and_nothing_else(size):
    cards, salts, published = published_of(size)
    assert published.sound
    for place, card in enumerate(cards):
        assert published.opens(place, card, salts[place], b"")
        assert not published.opens(place, (card + 1) % 52, salts[place], b"")
        for other in {place - 1, place + 1} & set(range(size)):
            assert not published.opens(other, card, salts[place], b"")
    assert not published.opens(size, cards[0], salts[0], b"")


def test_R32_format_2_a_changed_card_salt_path_leaf_or_root_opens_nothing():
    cards, salts, published = published_of(52)
    root, leaves = published.root, published.leaves
    assert published.opens(9, cards[9], salts[9], b"")
    assert not published.opens(9, cards[9], bytes(16), b"")
    assert not published.opens(9, cards[9], salts[9], bytes(32))        # a path has no place in format 2
    changed = leaves[: 9 * 32] + bytes(32) + leaves[10 * 32 :]
    for forged in (commitment.Published(root, 52, commitment.LEAVES, changed),      # the root gives it away
                   commitment.Published("00" * 32, 52, commitment.LEAVES, leaves),
                   commitment.Published(root, 51, commitment.LEAVES, leaves),
                   commitment.Published(root, 52, commitment.LEAVES, leaves[:-1]),
                   commitment.Published(root, 52, 3, leaves),                        # a format no one knows
                   commitment.Published(root, 52, commitment.MERKLE, leaves)):
        assert not forged.sound and not forged.opens(9, cards[9], salts[9], b"")


def test_R32_a_live_dealers_empty_commitment_is_sound_and_opens_nothing():
    for fmt in commitment.FORMATS:
        nothing = commitment.Published("", 0, fmt)
        assert nothing.sound and not nothing.opens(0, 0, bytes(16), b"")
    assert not commitment.Published("", 3).sound


@given(st.binary(max_size=200))
def test_R32_the_short_message_sha256_is_sha256(message: bytes) -> None:
    """Leaves, shuffle blocks and the seed's hash go through CPython's own SHA-256 where
    there is one (cheaper per call than OpenSSL's): the very same digest."""
    assert commitment.SHORT_SHA256(message).digest() == hashlib.sha256(message).digest()
    assert commitment.leaf(5, 0, message) == hashlib.sha256(b"\x00\x05" + CARD_TEXT[0].encode() + message).digest()
