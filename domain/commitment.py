"""The deck commitment of rule R32 (docs/rules.md): per-place leaves that open card by
card without revealing any other card, and the two formats that publish them.

* Each place ``p`` of the deck (0 = the top card) is a leaf:
  ``leaf = SHA-256(0x00 || p as one byte || the card's two ASCII letters || salt)``,
  ``salt`` 16 secret bytes of that place (``deck.py`` derives them from the seed).
* **Format 2** (``LEAVES``, hands since 2026-12-02): ``AntesCollected`` publishes the
  leaves themselves, one after the other (``deck_leaves``), and
  ``deck_root = SHA-256(0x02 || the leaves)``.  A card's proof is its place and salt
  (its ``path`` is empty): the leaf made from them must be the published one.  One hash
  per leaf and one over them all.
* **Format 1** (``MERKLE``, older hands; their ``AntesCollected`` has no format): the
  leaves stay secret and ``deck_root`` is their RFC 6962 Merkle root: two nodes make
  their parent ``SHA-256(0x01 || left || right)``, levels pair neighbours left to right,
  a level's odd last node goes up unchanged.  A proof carries its path: the sibling of
  each node on the way up (a node with no sibling on its level has none), the 32-byte
  hashes one after the other.  Kept to make and check old hands (a hand committed in
  format 1 before an upgrade deals its last cards in format 1).

Whoever holds a proof, the card and what ``AntesCollected`` published recomputes the
commitment; a different card, salt or place does not.  docs/design/fair-dealing.md
states both formats for third parties; :class:`Published` is the check.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable
from typing import Any, Final

from .cards import CARD_TEXT, DECK_SIZE

MERKLE: Final = 1          # format 1: the Merkle root; proofs carry their paths
LEAVES: Final = 2          # format 2: the leaves published; proofs are place and salt
FORMAT: Final = LEAVES     # what a new hand commits with
FORMATS: Final = (MERKLE, LEAVES)

_LEAF: Final = b"\x00"
_NODE: Final = b"\x01"
_ALL_LEAVES: Final = b"\x02"

# the leaf's prefix for each place and card: 0x00 || place || card letters
_PREFIX: Final = tuple(tuple(_LEAF + bytes((place,)) + CARD_TEXT[card].encode() for card in range(52))
                       for place in range(DECK_SIZE))


HASH_BYTES: Final = 32


def _short_sha256() -> Callable[[bytes], Any]:
    """SHA-256 for the short messages of a hand (leaves, the shuffle's blocks, the seed):
    CPython's own implementation (``_sha256``, ``_sha2`` from 3.12; what hashlib falls
    back to) where there is one.  The digest is the same SHA-256; for a one-block message
    a call costs about 15% less than OpenSSL's, whose set-up per call (EVP) outweighs its
    faster compression.  Long messages (format 2's root over the leaves) stay with
    OpenSSL, which is faster there."""
    for module in ("_sha256", "_sha2"):
        try:
            return importlib.import_module(module).sha256  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            pass
    return hashlib.sha256


SHORT_SHA256: Final = _short_sha256()
_DIGEST: Final = type(SHORT_SHA256(b"")).digest   # called unbound: compiled, no lookup by name per hash


def short_digest(message: bytes) -> bytes:
    """SHA-256 of a short message (a leaf, a block of the shuffle's stream, the seed)."""
    return _DIGEST(SHORT_SHA256(message))  # type: ignore[no-any-return]


def leaf(place: int, card: int, salt: bytes) -> bytes:
    return short_digest(_PREFIX[place][card] + salt)


def leaves(order: list[int], salts: list[bytes]) -> list[bytes]:
    """The leaf of each place of a deck (``order``: its cards, top first)."""
    return [short_digest(_PREFIX[place][order[place]] + salts[place]) for place in range(min(len(order), len(salts)))]


def leaves_root(joined: bytes) -> bytes:
    """Format 2's root: one hash over the published leaves."""
    return hashlib.sha256(_ALL_LEAVES + joined).digest()


# --- format 1: the Merkle tree -----------------------------------------------------------


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


# --- the check -----------------------------------------------------------------------------


class Published:
    """What a hand's ``AntesCollected`` published (``deck_root``, ``deck_size``,
    ``deck_format``, ``deck_leaves``), ready to open cards.  ``sound`` says whether it
    holds together: a known format, and in format 2 as many leaves as places, hashing
    to the root (checked once here, not with every card)."""

    __slots__ = ("root", "size", "format", "leaves", "sound")

    def __init__(self, root: str, size: int, format: int = MERKLE, leaves: bytes = b"") -> None:
        self.root, self.size, self.format, self.leaves = root, size, format, leaves
        if not root:                          # a live dealer's deck: nothing committed, nothing opens
            self.sound = not size and not leaves
        elif format == LEAVES:
            self.sound = len(leaves) == HASH_BYTES * size and leaves_root(leaves).hex() == root
        else:
            self.sound = format == MERKLE and not leaves

    def opens(self, place: int, card: int, salt: bytes, siblings: bytes) -> bool:
        """Does this proof (``salt`` and ``siblings``, the path) open ``card`` at
        ``place`` of the committed deck?"""
        if not self.sound or not 0 <= place < min(self.size, DECK_SIZE) or not 0 <= card < DECK_SIZE:
            return False
        if self.format == LEAVES:
            start = HASH_BYTES * place
            return not siblings and leaf(place, card, salt) == self.leaves[start : start + HASH_BYTES]
        found = root_of(place, self.size, leaf(place, card, salt), siblings)
        return found is not None and found.hex() == self.root


def opens(root: str, size: int, place: int, card: int, salt: bytes, siblings: bytes,
          format: int = MERKLE, leaves: bytes = b"") -> bool:
    """:meth:`Published.opens` for one proof."""
    return Published(root, size, format, leaves).opens(place, card, salt, siblings)
