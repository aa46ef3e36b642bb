"""The deck and fair dealing (rule R32).

Construction, so that anyone holding the revealed seed can recompute every card:

* the seed is 32 secret random bytes, chosen by the table service (never by the domain);
* the hand's first event publishes ``commitment = SHA-256(seed)`` in hex;
* a byte stream is derived from the seed in counter mode:
  ``block_i = SHA-256(seed || label || i.to_bytes(8, "big"))``, for a label naming the
  purpose (``b"deck"`` for the deck order, ``b"reshuffle:<street>"`` for rule R17);
* the deck, cards 0..51 in order (2c 2d 2h 2s 3c ... As), is shuffled with Fisher-Yates
  (for i from 51 down to 1 swap card i with card j, j uniform in 0..i), where j is drawn
  by rejection sampling from 32-bit big-endian words of the stream (no modulo bias).

The hand's last event reveals the seed; ``verify`` recomputes the order from it.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import Final

from .cards import ALL_CARDS

SEED_BYTES: Final = 32


def commitment(seed: bytes) -> str:
    """The published commitment to a seed: its SHA-256 in hex."""
    return hashlib.sha256(seed).hexdigest()


_SPAN: Final = 0x1_0000_0000    # 2**32: the number of distinct 32-bit words


def _words(prefix: bytes, first_block: int, blocks: int) -> list[int]:
    """Part of the stream: the 32-bit big-endian words of
    SHA-256(seed || label || counter) for ``blocks`` counters from ``first_block``
    (``prefix`` is seed || label)."""
    digests = b"".join([hashlib.sha256(prefix + counter.to_bytes(8, "big")).digest()
                        for counter in range(first_block, first_block + blocks)])
    return list(struct.unpack(f">{blocks * 8}I", digests))


def shuffled(cards: Sequence[int], seed: bytes, label: bytes) -> list[int]:
    """Fisher-Yates shuffle of ``cards`` driven by the seed's stream for ``label``; each
    index is drawn uniformly by rejection sampling (a word at or above the largest
    multiple of n below 2**32 is skipped, so there is no modulo bias)."""
    out = list(cards)
    prefix = seed + label
    # For speed the words are hashed in one go: one per swap and some to spare.  A
    # rejected word (about one in 10**8 here) hashes one block more, which keeps the
    # stock ahead of the swaps still to come.
    words = _words(prefix, 0, len(out) // 8 + 1)
    k = 0
    for i in range(len(out) - 1, 0, -1):
        n = i + 1
        limit = _SPAN - _SPAN % n
        w = words[k]
        k += 1
        while w >= limit:
            words += _words(prefix, len(words) // 8, 1)
            w = words[k]
            k += 1
        j = w % n
        out[i], out[j] = out[j], out[i]
    return out


def deck_from_seed(seed: bytes) -> list[int]:
    """The hand's full deck order, top card first."""
    return shuffled(ALL_CARDS, seed, b"deck")


def reshuffle_label(street: int) -> bytes:
    return b"reshuffle:%d" % street


def verify(seed: bytes, published_commitment: str, dealt_order: Sequence[int]) -> bool:
    """True when the seed matches the commitment and produced the dealt cards, in order."""
    deck = deck_from_seed(seed)
    return commitment(seed) == published_commitment and list(dealt_order) == deck[: len(dealt_order)]
