"""The hand's deck and its commitment (rules R32, R17 in docs/rules.md).

How a deck is made, so that the dispute process can make it again from the dealer's
record (docs/design/fair-dealing.md says it all for third parties):

* the seed is 32 secret random bytes, chosen by the table service (never by the domain);
  the hand's first event publishes ``SHA-256(seed)`` (:func:`seed_hash`);
* players may add entropy with their antes (``AntePosted.entropy``, published); the
  deck's **key** is then ``SHA-256(seed || SHA-256(e1) || SHA-256(e2) ...)`` in the order
  the antes were posted, else the seed itself (:func:`mixed_key`).  The seed is
  committed before any entropy arrives, so neither the room nor a player chooses the deck;
* a byte stream is derived from the key in counter mode:
  ``block_i = SHA-256(key || label || i.to_bytes(8, "big"))``, for a label naming the
  purpose (``b"deck"``, ``b"reshuffle:<street>"`` for rule R17);
* cards are shuffled with Fisher-Yates (for i from n - 1 down to 1 swap the cards at
  positions i and j, j uniform in 0..i), j drawn by rejection sampling from the stream's
  32-bit big-endian words (no modulo bias);
* the hand's deck is cards 0..51 (2c 2d 2h 2s 3c ... As) shuffled with label ``b"deck"``
  and read from its last position: the top card (place 0) is position 51;
* each place has a 16-byte salt: the ``SHAKE-256(key || b"salt")`` output cut in
  16-byte pieces, place 0 first;
* the commitment is the Merkle root over the places (``commitment.py``), published
  before the first card is dealt; each card goes out with the proof that opens its
  place (:meth:`CommittedDeck.proof`), and the key and seed never leave the store;
* a scripted deck (scenarios) is listed card by card; its key is the scenario's seed,
  or ``SHA-256("scripted:" + the cards joined by commas)``.  Live-dealer tables deal
  physical cards: no deck, nothing to commit.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import Final

from . import commitment
from .cards import ALL_CARDS, DECK_SIZE
from .events import CardProof
from .record import Record

SEED_BYTES: Final = 32
SALT_BYTES: Final = 16
MAX_ENTROPY_BYTES: Final = 32


def seed_hash(seed: bytes) -> str:
    """The seed's published commitment: its SHA-256 in hex."""
    return hashlib.sha256(seed).hexdigest()


def mixed_key(seed: bytes, entropy: Sequence[bytes]) -> bytes:
    """The key of a seeded deck: the seed, mixed with the players' entropy if any."""
    if not entropy:
        return seed
    return hashlib.sha256(seed + b"".join(hashlib.sha256(e).digest() for e in entropy)).digest()


def scripted_key(deck: Sequence[str]) -> bytes:
    """The key of a scripted deck given without a seed (salts, R17 reshuffles)."""
    return hashlib.sha256(("scripted:" + ",".join(deck)).encode()).digest()


def reshuffle_label(street: int) -> bytes:
    return b"reshuffle:%d" % street


_SPAN: Final = 0x1_0000_0000    # 2**32: the number of distinct 32-bit words
# j uniform in 0..n-1 takes a word below _LIMIT[n]; a word at or above it would bias j
_LIMIT: Final = tuple(_SPAN - _SPAN % n if n else 0 for n in range(DECK_SIZE + 1))


def _words(prefix: bytes, first: int, blocks: int) -> list[int]:
    """Blocks ``first`` .. ``first + blocks - 1`` of the stream, as 32-bit words."""
    sha256 = hashlib.sha256
    stream = b"".join([sha256(prefix + i.to_bytes(8, "big")).digest() for i in range(first, first + blocks)])
    return list(struct.unpack(">%dI" % (8 * blocks), stream))


def shuffled(cards: Sequence[int], key: bytes, label: bytes) -> list[int]:
    """``cards`` (at most a deck) shuffled by the key's stream for ``label``, by position."""
    cards = list(cards)
    prefix = key + label
    words = _words(prefix, 0, (len(cards) + 6) // 8)   # one word a swap, unless one is skipped
    used = 0
    for i in range(len(cards) - 1, 0, -1):
        limit = _LIMIT[i + 1]
        while True:
            if used == len(words):
                words += _words(prefix, len(words) // 8, 1)
            w = words[used]
            used += 1
            if w < limit:
                break
        j = w % (i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    return cards


def seeded_order(key: bytes) -> list[int]:
    """A seeded deck's order, top card first."""
    return shuffled(ALL_CARDS, key, b"deck")[::-1]


def salts(key: bytes, count: int) -> list[bytes]:
    stream = hashlib.shake_256(key + b"salt").digest(SALT_BYTES * count)
    return [stream[i : i + SALT_BYTES] for i in range(0, len(stream), SALT_BYTES)]


class Deck(Record):
    """The cards a hand deals from, top first."""

    __slots__ = ()

    def size(self) -> int:
        raise NotImplementedError

    def cards(self, start: int, count: int) -> list[int]:
        """The ``count`` cards from place ``start`` (0 = the top card)."""
        raise NotImplementedError


class ListedDeck(Deck):
    """Cards in a given order: the stub after a reshuffle (R17)."""

    FIELDS = ("order",)
    __slots__ = FIELDS

    def __init__(self, order: list[int]) -> None:
        self.order = order

    def _blank(self) -> ListedDeck:
        return ListedDeck([])

    def size(self) -> int:
        return len(self.order)

    def cards(self, start: int, count: int) -> list[int]:
        return self.order[start : start + count]


class CommittedDeck(Deck):
    """A hand's own deck: seeded (``listed`` None: the order comes from the key) or
    scripted (``listed``), and its commitment.  The order, salts and tree are worked
    out when first needed, after the last entropy is mixed in; what is worked out is
    fixed by the seed, the listed cards and the entropy, so it is no part of anyone's
    state (the fields are private: ``Table.state()`` leaves them out)."""

    FIELDS = ("_seed", "_listed", "_entropy", "_order", "_salts", "_tree", "_places", "_proofs")
    __slots__ = FIELDS

    def __init__(self, seed: bytes, listed: list[int] | None = None) -> None:
        self._seed = seed
        self._listed = listed
        self._entropy: list[bytes] = []
        self._order: list[int] | None = None
        self._salts: list[bytes] = []
        self._tree: list[list[bytes]] = []
        self._places: dict[int, int] = {}       # card -> its place
        self._proofs: dict[int, CardProof] = {}  # card -> its proof, once made

    def _blank(self) -> CommittedDeck:
        return CommittedDeck(b"")

    def mix(self, entropy: bytes) -> None:
        """A player's entropy (R32.4); a scripted deck is what it is, and ignores it."""
        assert self._order is None, "entropy after the deck was fixed"
        self._entropy.append(entropy)

    def key(self) -> bytes:
        """What every secret of the deck derives from (never published)."""
        return self._seed if self._listed is not None else mixed_key(self._seed, self._entropy)

    def order(self) -> list[int]:
        order = self._order
        if order is None:
            order = self._order = list(self._listed) if self._listed is not None else seeded_order(self.key())
        return order

    def size(self) -> int:
        return len(self._listed) if self._listed is not None else DECK_SIZE

    def cards(self, start: int, count: int) -> list[int]:
        return self.order()[start : start + count]

    def reshuffled(self, cards: list[int], street: int) -> list[int]:
        """R17: the stub and the burns, shuffled with the deck's key, top first."""
        return shuffled(cards, self.key(), reshuffle_label(street))

    def root(self) -> str:
        """The commitment: the Merkle root over the places, hex ("" with no cards)."""
        if not self.size():
            return ""
        return self._committed()[-1][0].hex()

    def _committed(self) -> list[list[bytes]]:
        tree = self._tree
        if not tree:
            order = self.order()
            self._salts = salts(self.key(), len(order))
            tree = self._tree = commitment.levels(commitment.leaves(order, self._salts))
            self._places = {card: p for p, card in enumerate(order)}
        return tree

    def proof(self, card: int) -> CardProof | None:
        """The proof that opens ``card``'s place (None: not in this deck, such as a live
        dealer's physical card)."""
        made = self._proofs.get(card)
        if made is None and self.size():
            tree = self._committed()
            place = self._places.get(card)
            if place is None:
                return None
            made = self._proofs[card] = CardProof(place, self._salts[place], commitment.path(tree, place))
        return made
