"""Hand values (rules R10, R22, R25 in docs/rules.md): high, 8-or-better low, partial boards.

Cards are the integers of :mod:`studroom.domain.cards` (``rank * 4 + suit``; ranks
0..12 = 2..A, suits 0..3 = c, d, h, s).

High hands (rule R22: cards speak)
    :func:`high_value` gives one integer per hand of 5..8 cards; a larger value is a
    better hand and equal values are an exact tie (suits never break ties). The value is
    ``category << 20`` plus up to five 4-bit rank nibbles, most significant first, e.g.
    a full house is ``(6 << 20) | (trips << 16) | (pair << 12)``.

    Evaluation is table driven and needs no loop over 5-card subsets:

    * Every card has a weight ``1 << (3 * rank)`` (a 3-bit counter per rank) plus
      ``1 << (40 + 4 * suit)`` (a 4-bit counter per suit). The sum over the hand is
      one integer whose low 39 bits are the rank multiset and whose high bits count
      the suits.
    * ``_HIGH`` maps every rank multiset of 5, 6 and 7 cards to its best non-flush
      value (straights included). It is built at import by dynamic programming:
      the value of an n-card multiset is the best value among its (n-1)-card
      sub-multisets, so 7-card entries cost a handful of dict operations each.
    * A flush exists iff a suit counter reaches 5; then the 13-bit rank mask of that
      suit is looked up in ``_FLUSH`` (8192 entries: straight flush or the top five).
    * Eight cards (possible only with community cards) take the best of the 7-card
      sub-multisets, at most eight lookups.

Low hands (rule R25)
    :func:`low_value` gives the 8-or-better low, or ``None``; a SMALLER value is better.
    The value is a mask of the five lowest distinct low ranks (ace = bit 0, 2 = bit 1,
    ..., 8 = bit 7); comparing such masks as integers compares the highest card first,
    then the next, exactly as low hands are compared.

Partial boards (rule R10)
    :func:`board_value` ranks 1..5 up cards for who acts first.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import combinations
from typing import Final

__all__ = [
    "HIGH_CARD",
    "PAIR",
    "TWO_PAIR",
    "TRIPS",
    "STRAIGHT",
    "FLUSH",
    "FULL_HOUSE",
    "QUADS",
    "STRAIGHT_FLUSH",
    "CATEGORY_NAMES",
    "high_value",
    "high_category",
    "describe_high",
    "best_five",
    "low_value",
    "describe_low",
    "board_value",
    "lowest_card",
    "highest_card",
]

HIGH_CARD, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS, STRAIGHT_FLUSH = range(9)
CATEGORY_NAMES: Final = (
    "high card",
    "pair",
    "two pair",
    "three of a kind",
    "straight",
    "flush",
    "full house",
    "four of a kind",
    "straight flush",
)

_CAT_SHIFT: Final = 20
_ACE: Final = 12
_WHEEL_MASK: Final = 0b1_0000_0000_1111  # A, 5, 4, 3, 2
_FIVE: Final = 3  # rank of the five: high card of the wheel

_RANK_FIELD_MASK: Final = (1 << 39) - 1
_SUIT_SHIFT: Final = 40
_SUIT_BIAS: Final = 0x3333  # suit counter + 3 sets bit 3 of its nibble iff the count is >= 5
_SUIT_HIT: Final = 0x8888

# Card weight: rank counter (3 bits per rank) + suit counter (4 bits per suit).
_WEIGHT: Final = tuple((1 << (3 * (c >> 2))) + (1 << (_SUIT_SHIFT + 4 * (c & 3))) for c in range(52))
_RANK_WEIGHT: Final = tuple(1 << (3 * r) for r in range(13))


def _pack(category: int, ranks: Sequence[int]) -> int:
    value = category
    for i in range(5):
        value = (value << 4) | (ranks[i] if i < len(ranks) else 0)
    return value


def _straight_high(mask: int) -> int:
    """Highest straight in a 13-bit rank mask (rank of its top card), or -1."""
    for top in range(_ACE, _FIVE, -1):
        window = 0b11111 << (top - 4)
        if mask & window == window:
            return top
    if mask & _WHEEL_MASK == _WHEEL_MASK:
        return _FIVE
    return -1


def _top_ranks(mask: int, n: int) -> list[int]:
    out: list[int] = []
    r = _ACE
    while r >= 0 and len(out) < n:
        if mask >> r & 1:
            out.append(r)
        r -= 1
    return out


def _five_rank_value(counts: dict[int, int]) -> int:
    """Non-flush value of exactly five cards given as ``{rank: count}``."""
    groups = sorted(counts.items(), key=lambda rc: (rc[1], rc[0]), reverse=True)
    shape = tuple(c for _, c in groups)
    ranks = [r for r, _ in groups]
    if shape == (4, 1):
        return _pack(QUADS, ranks)
    if shape == (3, 2):
        return _pack(FULL_HOUSE, ranks)
    if shape == (3, 1, 1):
        return _pack(TRIPS, ranks)
    if shape == (2, 2, 1):
        return _pack(TWO_PAIR, ranks)
    if shape == (2, 1, 1, 1):
        return _pack(PAIR, ranks)
    mask = 0
    for r in ranks:
        mask |= 1 << r
    top = _straight_high(mask)
    if top >= 0:
        return _pack(STRAIGHT, (top,))
    return _pack(HIGH_CARD, ranks)


def _build_tables() -> tuple[dict[int, int], tuple[int, ...]]:
    # 5-card rank multisets (count <= 4 per rank), valued directly.
    five: dict[int, int] = {}

    def walk(start: int, left: int, key: int, counts: dict[int, int]) -> None:
        if left == 0:
            five[key] = _five_rank_value(counts)
            return
        for r in range(start, 13):
            for c in range(1, min(4, left) + 1):
                counts[r] = c
                walk(r + 1, left - c, key + c * _RANK_WEIGHT[r], counts)
            del counts[r]

    walk(0, 5, 0, {})

    table = dict(five)
    layer = five
    fours = tuple(4 << (3 * r) for r in range(13))
    pairs = tuple(zip(_RANK_WEIGHT, fours))
    for _ in (6, 7):
        nxt: dict[int, int] = {}
        get = nxt.get
        for key, value in layer.items():
            for w, four in pairs:
                if key & (7 * w) != four:  # this rank can take one more card
                    k = key + w
                    if get(k, -1) < value:
                        nxt[k] = value
        table.update(nxt)
        layer = nxt

    flush = [0] * 8192
    for mask in range(8192):
        if mask.bit_count() >= 5:
            top = _straight_high(mask)
            if top >= 0:
                flush[mask] = _pack(STRAIGHT_FLUSH, (top,))
            else:
                flush[mask] = _pack(FLUSH, _top_ranks(mask, 5))
    return table, tuple(flush)


_HIGH, _FLUSH = _build_tables()


def _eight_card_rank_value(rank_key: int) -> int:
    best = -1
    high = _HIGH
    for r in range(13):
        w = _RANK_WEIGHT[r]
        if rank_key & (7 * w):
            v = high[rank_key - w]
            if v > best:
                best = v
    return best


def high_value(cards: Sequence[int]) -> int:
    """Value of the best five-card high hand among 5..8 distinct cards.

    Larger is better; equal values are an exact tie. Straights include the wheel
    A-2-3-4-5 (the lowest straight and straight flush). Suits never break ties.
    """
    key = sum(map(_WEIGHT.__getitem__, cards))
    rank_key = key & _RANK_FIELD_MASK
    value = _HIGH.get(rank_key)
    if value is None:
        n = len(cards)
        if n != 8:
            raise ValueError(f"high_value needs 5..8 distinct cards, got {n}")
        value = _eight_card_rank_value(rank_key)
    hit = ((key >> _SUIT_SHIFT) + _SUIT_BIAS) & _SUIT_HIT
    if hit:
        s = (hit.bit_length() - 4) >> 2
        mask = 0
        for c in cards:
            if c & 3 == s:
                mask |= 1 << (c >> 2)
        f = _FLUSH[mask]
        if f > value:  # with 8 cards a full house or quads can beat the flush
            value = f
    return value


def high_category(value: int) -> int:
    """Category of a :func:`high_value`: 0 = high card .. 8 = straight flush."""
    return value >> _CAT_SHIFT


def _nibbles(value: int) -> list[int]:
    return [(value >> (4 * i)) & 15 for i in range(4, -1, -1)]


_SINGULAR: Final = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
             "jack", "queen", "king", "ace")
_PLURAL: Final = ("twos", "threes", "fours", "fives", "sixes", "sevens", "eights", "nines",
           "tens", "jacks", "queens", "kings", "aces")


@cache   # at most 7,462 distinct values
def describe_high(value: int) -> str:
    """English text of a :func:`high_value`, e.g. ``"full house, kings full of sevens"``."""
    cat = high_category(value)
    r = _nibbles(value)
    one, many = _SINGULAR, _PLURAL
    if cat == STRAIGHT_FLUSH:
        if r[0] == _ACE:
            return "royal flush"
        return f"straight flush, {one[r[0]]} high"
    if cat == QUADS:
        return f"four of a kind, {many[r[0]]}"
    if cat == FULL_HOUSE:
        return f"full house, {many[r[0]]} full of {many[r[1]]}"
    if cat == FLUSH:
        return f"flush, {one[r[0]]} high"
    if cat == STRAIGHT:
        return f"straight, {one[r[0]]} high"
    if cat == TRIPS:
        return f"three of a kind, {many[r[0]]}"
    if cat == TWO_PAIR:
        return f"two pair, {many[r[0]]} and {many[r[1]]}"
    if cat == PAIR:
        return f"pair of {many[r[0]]}"
    return f"high card {one[r[0]]}"


def best_five(cards: Sequence[int]) -> tuple[int, ...]:
    """The five cards of the best high hand among 5..8 cards (hand histories).

    Ordered for display: the largest group first (quads, trips, pairs, by rank), then
    kickers from highest down; a straight from its top card down (wheel ends with the
    ace). When several choices tie, any of them is returned (deterministically).
    """
    target = high_value(cards)
    best = None
    for five in combinations(sorted(cards, reverse=True), 5):
        if high_value(five) == target:
            best = five
            break
    assert best is not None
    counts: dict[int, int] = {}
    for c in best:
        counts[c >> 2] = counts.get(c >> 2, 0) + 1
    cat = high_category(target)
    if cat in (STRAIGHT, STRAIGHT_FLUSH) and (target >> 16) & 15 == _FIVE:
        return tuple(sorted(best, key=lambda c: ((c >> 2) + 1) % 13, reverse=True))
    return tuple(sorted(best, key=lambda c: (counts[c >> 2], c), reverse=True))


# --- 8 or better low (rule R25) -----------------------------------------------------

# Bit of a card in the low mask: ace = bit 0, 2 = bit 1, ..., 8 = bit 7; 9..K none.
_LOW_BIT: Final = tuple(
    1 if (c >> 2) == _ACE else (1 << ((c >> 2) + 1) if (c >> 2) <= 6 else 0) for c in range(52)
)


def _low_entry(mask: int) -> int | None:
    bits = [b for b in range(8) if mask >> b & 1]
    if len(bits) < 5:
        return None
    out = 0
    for b in bits[:5]:
        out |= 1 << b
    return out


_LOW: Final = tuple(_low_entry(m) for m in range(256))
_LOW_NAMES: Final = ("A", "2", "3", "4", "5", "6", "7", "8")


def low_value(cards: Sequence[int]) -> int | None:
    """The 8-or-better low (rule R25), or ``None`` when the cards make no qualifying low.

    Five cards of different ranks, all 8 or lower, aces low; straights and flushes do
    not count against a low. SMALLER is better (A-2-3-4-5 is the best, 8-7-6-5-4 the
    worst qualifying low); equal values are a tie.
    """
    mask = 0
    for c in cards:
        mask |= _LOW_BIT[c]
    return _LOW[mask]


@cache   # at most 56 distinct values
def describe_low(value: int) -> str:
    """``"8-6-4-2-A low"``: the five low cards from highest down."""
    return "-".join(_LOW_NAMES[b] for b in range(7, -1, -1) if value >> b & 1) + " low"


# --- Partial boards (rule R10) -----------------------------------------------------

def board_value(up_cards: Sequence[int]) -> tuple[int, ...]:
    """Rank of a player's up cards for who acts first (rule R10); larger is better.

    A tuple ``(category, ranks...)`` using the categories of :func:`high_value`. With
    1..4 up cards only pairs, two pair, trips and quads count, then the highest cards:
    ``(PAIR, pair, kickers...)``, ``(TWO_PAIR, high pair, low pair, kicker?)``,
    ``(TRIPS, trips, kicker?)``, ``(QUADS, quads)``, ``(HIGH_CARD, ranks...)``, ranks
    from highest down. Suits never count.

    Five up cards (four up cards plus a community card, rule R17.4) form a complete
    poker hand, so there straights, flushes and full houses count as in
    :func:`high_value` (the rule excludes them only for FEWER than five cards).

    Boards of different sizes compare by category, then group ranks, then kickers
    from the highest down; if one board's ranks are a prefix of the other's, the board
    with more cards is higher (Python tuple order).
    """
    n = len(up_cards)
    if not 1 <= n <= 5:
        raise ValueError(f"board_value needs 1..5 up cards, got {n}")
    if n == 5:
        v = high_value(up_cards)
        cat = high_category(v)
        r = _nibbles(v)
        width = {STRAIGHT: 1, STRAIGHT_FLUSH: 1, FULL_HOUSE: 2, QUADS: 2, TRIPS: 3,
                 TWO_PAIR: 3, PAIR: 4}.get(cat, 5)
        return (cat, *r[:width])
    counts: dict[int, int] = {}
    for c in up_cards:
        counts[c >> 2] = counts.get(c >> 2, 0) + 1
    groups = sorted(counts.items(), key=lambda rc: (rc[1], rc[0]), reverse=True)
    shape = tuple(c for _, c in groups)
    ranks = tuple(r for r, _ in groups)
    if shape[0] == 4:
        cat = QUADS
    elif shape[0] == 3:
        cat = TRIPS
    elif shape[0] == 2:
        cat = TWO_PAIR if len(shape) > 1 and shape[1] == 2 else PAIR
    else:
        cat = HIGH_CARD
    return (cat, *ranks)


def lowest_card(cards: Sequence[int]) -> int:
    """The lowest card by rank, then suit (rule R7, bring-in).

    Ace is high and clubs < diamonds < hearts < spades. Because a card is
    ``rank * 4 + suit`` with ranks 2..A = 0..12 and suits c, d, h, s = 0..3, this order
    is exactly integer order, so the lowest card is ``min(cards)``.
    """
    return min(cards)


def highest_card(cards: Sequence[int]) -> int:
    """The highest card by rank, then suit (spades highest): rule R24's odd chip.

    Integer order of ``rank * 4 + suit`` is exactly that order, so this is ``max``.
    """
    return max(cards)

