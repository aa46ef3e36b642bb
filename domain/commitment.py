"""The deck commitment of rule R32 (docs/rules.md): a Merkle tree over a deck's places
that opens card by card, without revealing any other card.

* Each place ``p`` of the deck (0 = the top card) is a leaf:
  ``leaf = SHA-256(0x00 || p as one byte || the card's two ASCII letters || salt)``,
  ``salt`` 16 secret bytes of that place (``deck.py`` derives them from the seed);
* two nodes make their parent: ``SHA-256(0x01 || left || right)``;
* the tree is built level by level from the leaves up, pairing neighbours left to right;
  a level's odd last node goes up unchanged.  (This is RFC 6962's Merkle Tree Hash.)
  The root, in hex, is the published commitment;
* the proof that opens place ``p`` is its salt and its path: the sibling of each node on
  the way up, from the leaf's sibling to the root's child (a node with no sibling on its
  level has none), the 32-byte hashes one after the other.  Whoever holds the proof, the
  card, ``p`` and the deck's size recomputes the root; a different card, salt or place
  gives another root.

docs/design/fair-dealing.md states it for third parties; :func:`opens` is the check.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

from .cards import CARD_TEXT, DECK_SIZE

_LEAF: Final = b"\x00"
_NODE: Final = b"\x01"

# the leaf's prefix for each place and card: 0x00 || place || card letters
_PREFIX: Final = tuple(tuple(_LEAF + bytes((place,)) + CARD_TEXT[card].encode() for card in range(52))
                       for place in range(DECK_SIZE))


HASH_BYTES: Final = 32


def leaf(place: int, card: int, salt: bytes) -> bytes:
    return hashlib.sha256(_PREFIX[place][card] + salt).digest()


def leaves(order: Sequence[int], salts: Sequence[bytes]) -> list[bytes]:
    """The leaf of each place of a deck (``order``: its cards, top first)."""
    sha256 = hashlib.sha256
    return [sha256(_PREFIX[place][card] + salt).digest() for place, (card, salt) in enumerate(zip(order, salts))]


def node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(_NODE + left + right).digest()


def levels(leaves: list[bytes]) -> list[list[bytes]]:
    """The tree over ``leaves``, bottom level first, the root alone on the last."""
    sha256 = hashlib.sha256
    tree = [leaves]
    level = leaves
    while len(level) > 1:
        width = len(level)
        parents = [sha256(_NODE + level[i] + level[i + 1]).digest() for i in range(0, width - 1, 2)]
        if width & 1:
            parents.append(level[-1])
        level = parents
        tree.append(level)
    return tree


def path(tree: list[list[bytes]], place: int) -> bytes:
    """The siblings on the way from leaf ``place`` up to the root, one after the other."""
    return b"".join([tree[level][index] for level, index in _siblings(len(tree[0]))[place]])


def _siblings(size: int) -> list[list[tuple[int, int]]]:
    """For each leaf of a tree of ``size`` leaves, where its path's nodes are (level,
    index): the same for every tree of that size, so worked out once."""
    found = _SIBLINGS.get(size)
    if found is None:
        found = []
        for place in range(size):
            spec: list[tuple[int, int]] = []
            index, width, level = place, size, 0
            while width > 1:
                if index ^ 1 < width:
                    spec.append((level, index ^ 1))
                index, width, level = index >> 1, (width + 1) >> 1, level + 1
            found.append(spec)
        _SIBLINGS[size] = found
    return found


_SIBLINGS: Final[dict[int, list[list[tuple[int, int]]]]] = {}


def root_of(place: int, size: int, leaf_hash: bytes, siblings: bytes) -> bytes | None:
    """The root that ``siblings`` lead to from leaf ``place`` of a tree of ``size``
    leaves, or None when the path does not fit that place in that tree."""
    if not 0 <= place < size:
        return None
    current, index, width, used = leaf_hash, place, size, 0
    while width > 1:
        if index & 1 or index + 1 < width:        # this node has a sibling on its level
            sibling = siblings[used : used + HASH_BYTES]
            if len(sibling) < HASH_BYTES:
                return None
            used += HASH_BYTES
            current = node(sibling, current) if index & 1 else node(current, sibling)
        index, width = index >> 1, (width + 1) >> 1
    return current if used == len(siblings) else None


def opens(root: str, size: int, place: int, card: int, salt: bytes, siblings: bytes) -> bool:
    """Does this proof (``salt`` and ``siblings``) open ``card`` at ``place`` of the
    committed deck of ``size`` cards whose root is ``root`` (hex)?"""
    if not 0 <= place < min(size, DECK_SIZE) or not 0 <= card < DECK_SIZE:
        return False
    found = root_of(place, size, leaf(place, card, salt), siblings)
    return found is not None and found.hex() == root
