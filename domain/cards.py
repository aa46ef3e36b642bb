"""Cards as small integers.

A card is ``rank * 4 + suit``: ranks 0..12 stand for 2..A, suits 0..3 for clubs,
diamonds, hearts, spades.  Ordering cards as integers therefore orders them by rank,
then by suit clubs < diamonds < hearts < spades: exactly the order rule R7 uses to find
the lowest door card and rule R24 uses to find the highest single card.

On the wire (events, scenarios) a card is the usual two-letter text, ``"Kd"``.

Rules R7, R24 (docs/rules.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

RANKS: Final = "23456789TJQKA"
SUITS: Final = "cdhs"

DECK_SIZE: Final = 52
ALL_CARDS: Final = tuple(range(DECK_SIZE))

CARD_TEXT: Final = tuple(r + s for r in RANKS for s in SUITS)
_CARD_OF_TEXT: Final = {text: card for card, text in enumerate(CARD_TEXT)}

ACE: Final = 12


class BadCard(ValueError):
    """A card text that is not rank + suit (``"Td"``, ``"2c"``)."""


def rank(card: int) -> int:
    return card >> 2


def suit(card: int) -> int:
    return card & 3


def parse(text: str | None) -> int:
    """``"Kd"`` -> card number; raises :class:`BadCard` on anything else (a hidden card,
    ``None``, included)."""
    card = _CARD_OF_TEXT.get(text) if isinstance(text, str) else None
    if card is None:
        raise BadCard(f"not a card: {text!r} (rank of {RANKS} + suit of {SUITS})")
    return card


def parse_many(texts: Sequence[str]) -> list[int]:
    try:
        return [_CARD_OF_TEXT[t] for t in texts]     # the fast way, for a whole deck
    except (KeyError, TypeError):
        return [parse(t) for t in texts]             # says which card is bad


# A memo key for the ranks of a few cards: one number with a base-5 digit per rank
# counting its cards (never more than 4, so digits never carry).  Equal rank patterns
# give equal numbers, and a card more is an addition.  Base 5, not 8: an int hashes to
# itself and a dict probes first by the low bits, which in base 8 are all zero below
# the lowest rank; the memos of thousands of patterns then took about five probes a
# lookup (each a likely cache miss), in base 5 about one and a half.
RANK_DIGIT: Final = tuple(5 ** (card >> 2) for card in ALL_CARDS)


def rank_pattern(cards: Iterable[int]) -> int:
    return sum([RANK_DIGIT[c] for c in cards])


def show(card: int) -> str:
    return CARD_TEXT[card]


def show_many(cards: Iterable[int]) -> list[str]:
    return [CARD_TEXT[c] for c in cards]
