"""The deck and fair dealing (rule R32).

Construction, so that anyone holding the revealed seed can recompute every card:

* the seed is 32 secret random bytes, chosen by the table service (never by the domain);
* the hand's first event publishes ``commitment = SHA-256(seed)`` in hex;
* a byte stream is derived from the seed in counter mode:
  ``block_i = SHA-256(seed || label || i.to_bytes(8, "big"))``, for a label naming the
  purpose (``b"deck"`` for the deck order, ``b"reshuffle:<street>"`` for rule R17);
* cards are shuffled with Fisher-Yates (for i from n - 1 down to 1 swap the cards at
  positions i and j, j uniform in 0..i), j drawn by rejection sampling from the stream's
  32-bit big-endian words (no modulo bias).  Each step makes position i final;
* the hand's deck is cards 0..51 (2c 2d 2h 2s 3c ... As) shuffled with label ``b"deck"``
  and dealt from the end, in the order the shuffle makes the positions final: the top
  card is position 51, the next position 50, and so on.  A hand therefore runs the
  shuffle only as far as it deals (a heads-up hand folded on third street hashes one
  block of the stream, not seven);
* a reshuffle (R17) shuffles the stub then the burns (that list) with label
  ``b"reshuffle:<street>"``; its result is published in the event (``stub``) and dealt
  from the front.

The hand's last event reveals the seed; ``audit.py`` recomputes every card from it.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import Final

from .cards import ALL_CARDS, DECK_SIZE
from .record import Record

SEED_BYTES: Final = 32


def commitment(seed: bytes) -> str:
    """The published commitment to a seed: its SHA-256 in hex."""
    return hashlib.sha256(seed).hexdigest()


_SPAN: Final = 0x1_0000_0000    # 2**32: the number of distinct 32-bit words


def _block(prefix: bytes, counter: int) -> tuple[int, ...]:
    """Block ``counter`` of the stream, as its 8 words (``prefix`` is seed || label)."""
    return struct.unpack(">8I", hashlib.sha256(prefix + counter.to_bytes(8, "big")).digest())


class Shuffle(Record):
    """Fisher-Yates run step by step, only as far as asked.  What it yields is fixed by
    its cards, seed and label, so how far it has run is no part of anyone's state (its
    fields are private: ``Table.state()`` leaves them out)."""

    FIELDS = ("_cards", "_done", "_prefix", "_words", "_used")
    __slots__ = FIELDS

    def __init__(self, cards: Sequence[int], seed: bytes, label: bytes) -> None:
        self._cards = list(cards)
        self._done = 0                 # positions n - 1 down to n - done are final
        self._prefix = seed + label
        self._words: list[int] = []    # the stream so far
        self._used = 0                 # words drawn from it

    def _blank(self) -> Shuffle:
        return Shuffle((), b"", b"")

    def fix(self, count: int) -> list[int]:
        """Shuffle until the last ``count`` positions are final; the cards by position."""
        cards = self._cards
        n = len(cards)
        while self._done < count and self._done < n:
            i = n - 1 - self._done
            if i > 0:
                j = self._below(i + 1)
                cards[i], cards[j] = cards[j], cards[i]
            self._done += 1
        return cards

    def _below(self, n: int) -> int:
        """Uniform in 0..n-1: a word at or above the largest multiple of n below 2**32 is
        skipped, so there is no modulo bias (about one word in 10**8 here)."""
        limit = _SPAN - _SPAN % n
        while True:
            if self._used == len(self._words):
                self._words += _block(self._prefix, len(self._words) // 8)
            w = self._words[self._used]
            self._used += 1
            if w < limit:
                return w % n


def shuffled(cards: Sequence[int], seed: bytes, label: bytes) -> list[int]:
    """``cards`` shuffled to the end by the seed's stream for ``label``, by position."""
    return Shuffle(cards, seed, label).fix(len(cards))


class Deck(Record):
    """The cards a hand deals from, top first."""

    __slots__ = ()

    def size(self) -> int:
        raise NotImplementedError

    def cards(self, start: int, count: int) -> list[int]:
        """The ``count`` cards from place ``start`` (0 = the top card)."""
        raise NotImplementedError


class ListedDeck(Deck):
    """A deck given card by card: a scripted deck (possibly short), a live dealer's
    table (empty: its console reports the cards), the stub after a reshuffle (R17)."""

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


class SeededDeck(Deck):
    """The hand's deck from its seed (R32), shuffled only as far as it is dealt."""

    FIELDS = ("_shuffle",)
    __slots__ = FIELDS

    def __init__(self, seed: bytes) -> None:
        self._shuffle = Shuffle(ALL_CARDS, seed, b"deck")

    def _blank(self) -> SeededDeck:
        return SeededDeck(b"")

    def size(self) -> int:
        return DECK_SIZE

    def cards(self, start: int, count: int) -> list[int]:
        positions = self._shuffle.fix(start + count)
        last = DECK_SIZE - 1
        return [positions[last - place] for place in range(start, start + count)]


def deck_from_seed(seed: bytes) -> list[int]:
    """The hand's whole deck order, top card first."""
    return SeededDeck(seed).cards(0, DECK_SIZE)


def reshuffle_label(street: int) -> bytes:
    return b"reshuffle:%d" % street

