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
* the commitment (``commitment.py``) is published before the first card is dealt: in
  format 2 the leaves of the places the hand can reach (:func:`reach`: no card is dealt
  from further down) and the hash over them, in format 1 (older hands) the Merkle root
  over all the places; each card goes out with the proof that opens its place
  (:meth:`CommittedDeck.proof`), and the key and seed never leave the store;
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
from .games import Game
from .record import Record

SEED_BYTES: Final = 32
SALT_BYTES: Final = 16
MAX_ENTROPY_BYTES: Final = 32
_CARD_PROOF: Final = CardProof   # compiled, a C static (an imported event class is looked up at every use)


def seed_hash(seed: bytes) -> str:
    """The seed's published commitment: its SHA-256 in hex."""
    return commitment.short_digest(seed).hex()


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


_COUNTER: Final = tuple(i.to_bytes(8, "big") for i in range(64))   # i8(i) of the blocks a deck can use
_BLOCK_WORDS: Final = tuple(struct.Struct(">%dI" % (8 * blocks)) for blocks in range(8))


def _words(prefix: bytes, first: int, blocks: int) -> tuple[int, ...]:
    """Blocks ``first`` .. ``first + blocks - 1`` of the stream, as 32-bit words."""
    stream = b"".join([commitment.short_digest(prefix + (_COUNTER[i] if i < 64 else i.to_bytes(8, "big")))
                       for i in range(first, first + blocks)])
    unpack = _BLOCK_WORDS[blocks].unpack if blocks < 8 else struct.Struct(">%dI" % (8 * blocks)).unpack
    return unpack(stream)


def _fix(cards: list[int], prefix: bytes, swaps: int) -> list[int]:
    """The first ``swaps`` steps of Fisher-Yates on ``cards``, in place: for i from the
    last position down, the stream's next word below ``_LIMIT[i + 1]`` gives
    j = word mod (i + 1), and positions i and j swap.  Returns the cards of the
    positions so fixed, the last position first."""
    words = _words(prefix, 0, (swaps + 7) // 8)   # one word a swap, unless one is skipped
    available = len(words)
    used = 0
    for i in range(len(cards) - 1, len(cards) - 1 - swaps, -1):
        limit = _LIMIT[i + 1]
        while True:
            if used == available:
                words += _words(prefix, available // 8, 1)
                available = len(words)
            w = words[used]
            used += 1
            if w < limit:
                break
        j = w % (i + 1)
        card = cards[j]
        cards[j] = cards[i]
        cards[i] = card
    fixed = cards[len(cards) - swaps :]
    fixed.reverse()
    return fixed


def shuffled(cards: Sequence[int], key: bytes, label: bytes) -> list[int]:
    """``cards`` (at most a deck) shuffled by the key's stream for ``label``, by position."""
    cards = list(cards)
    _fix(cards, key + label, max(len(cards) - 1, 0))
    return cards


def seeded_order(key: bytes, count: int = DECK_SIZE) -> list[int]:
    """A seeded deck's order, top card first: its top ``count`` places (place p is
    position 51 - p of the shuffle: the positions Fisher-Yates fixes first, so the
    shuffle stops there)."""
    cards = list(ALL_CARDS)
    if count < DECK_SIZE:
        return _fix(cards, key + b"deck", count)
    return _fix(cards, key + b"deck", DECK_SIZE - 1) + [cards[0]]


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
    scripted (``listed``), and its commitment.  The commitment's format and the places
    it covers are fixed with :meth:`fix` when the antes close (``AntesCollected``); the
    order, salts and leaves are worked out when first needed, after the last entropy is
    mixed in.  What is worked out is fixed by the seed, the listed cards, the entropy,
    the format and the span, so it is no part of anyone's state (the fields are private:
    ``Table.state()`` leaves them out)."""

    FIELDS = ("_seed", "_listed", "_entropy", "_format", "_span",
              "_order", "_salts", "_root", "_leaves", "_tree", "_places", "_proofs")
    __slots__ = FIELDS
    _order: list[int] | None        # the top places worked out so far (all of them, or the span's)
    _salts: list[bytes]
    _root: bytes
    _leaves: bytes                  # format 2: published
    _tree: list[list[bytes]]        # format 1: secret but for the paths
    _places: list[int]              # by card (lists: cheaper than dicts): its place in the span, or -1
    _proofs: list[CardProof | None]   # by card: its proof, once made

    def __init__(self, seed: bytes, listed: list[int] | None = None) -> None:
        self._seed = seed
        self._listed = listed
        self._entropy: list[bytes] = []
        self._format = commitment.FORMAT
        self._span = -1                         # the places committed (-1: the whole deck)
        self._order = None
        self._forget()

    def _forget(self) -> None:
        """Drop what the commitment's format and span fix (the order depends on neither)."""
        self._salts, self._root, self._leaves, self._tree = [], b"", b"", []
        self._places, self._proofs = [-1] * DECK_SIZE, [None] * DECK_SIZE

    def _blank(self) -> CommittedDeck:
        return CommittedDeck(b"")

    def mix(self, entropy: bytes) -> None:
        """A player's entropy (R32.4); a scripted deck is what it is, and ignores it."""
        assert self._order is None, "entropy after the deck was fixed"
        self._entropy.append(entropy)

    def fix(self, format: int, span: int) -> None:
        """The commitment's format and how many places it covers from the top (what
        ``AntesCollected`` publishes as ``deck_format`` and ``deck_size``)."""
        span = min(span, self.size()) if span >= 0 else -1
        if (format, span) != (self._format, self._span):
            if self._root:          # committed under the old ones (a hand fixes before it commits)
                self._forget()
            self._format, self._span = format, span

    def format(self) -> int:
        return self._format

    def span(self) -> int:
        """The places the commitment covers: the top ``span`` of the deck."""
        size = self.size()
        return size if self._span < 0 else min(self._span, size)

    def key(self) -> bytes:
        """What every secret of the deck derives from (never published)."""
        return self._seed if self._listed is not None else mixed_key(self._seed, self._entropy)

    def order(self) -> list[int]:
        """The whole order, top first."""
        return self._top(self.size())

    def _top(self, count: int) -> list[int]:
        """At least the top ``count`` places (a seeded deck shuffles no further than
        asked: the places below the span are needed only by R17 and the audit)."""
        order = self._order
        if order is None or len(order) < min(count, self.size()):
            if self._listed is not None:
                order = list(self._listed)
            else:
                order = seeded_order(self.key(), count)
            self._order = order
        return order

    def size(self) -> int:
        return len(self._listed) if self._listed is not None else DECK_SIZE

    def cards(self, start: int, count: int) -> list[int]:
        return self._top(start + count)[start : start + count]

    def reshuffled(self, cards: list[int], street: int) -> list[int]:
        """R17: the stub and the burns, shuffled with the deck's key, top first."""
        return shuffled(cards, self.key(), reshuffle_label(street))

    def root(self) -> str:
        """The published commitment, hex ("" with no cards)."""
        return self._committed().hex()

    def leaves(self) -> bytes:
        """Format 2: the leaves ``AntesCollected`` publishes (empty in format 1)."""
        self._committed()
        return self._leaves

    def _committed(self) -> bytes:
        root = self._root
        if not root and self.size():
            span = self.span()
            top = self._top(span)[:span]
            self._salts = salts(self.key(), span)
            hashed = commitment.leaves(top, self._salts)
            for place, card in enumerate(top):
                self._places[card] = place
            if self._format == commitment.MERKLE:
                self._tree = commitment.levels(hashed)
                root = self._tree[-1][0]
            else:
                self._leaves = b"".join(hashed)
                root = commitment.leaves_root(self._leaves)
            self._root = root
        return root

    def proof(self, card: int) -> CardProof | None:
        """The proof that opens ``card``'s place (None: not in the committed places,
        such as a live dealer's physical card)."""
        made = self._proofs[card]
        if made is None and self.size():
            self._committed()
            place = self._places[card]
            if place < 0:
                return None
            path = commitment.path(self._tree, place) if self._tree else b""
            made = self._proofs[card] = _CARD_PROOF(place, self._salts[place], path)
        return made


def reach(game: Game, players: int) -> int:
    """The most cards a hand of ``game`` with ``players`` dealt in can take from the
    deck: each player's cards and a burn before every later street.  A deck that
    deep never runs out (R17), so no card is ever dealt from below it."""
    return players * sum(len(street.faces) for street in game.streets) + len(game.streets) - 1
