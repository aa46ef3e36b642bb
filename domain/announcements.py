"""What the dealer announces about a player's up cards (rules R30, R31 in
docs/rules.md).

R30: from the second up card on, the made combinations the up cards actually show:
a pair, two pair (the higher pair is named), three of a kind, four of a kind.
R31: with (exactly) four up cards also the draws one card short of a straight, a
flush, or a straight flush (announced as both draws, "possible straight, possible
flush").

:func:`describe` gives the language-neutral :class:`Announcement` that events carry;
:func:`render` turns it into English or German text; :func:`announce` does both.

Decisions where the rules are silent:

* Made hand and draws are joined with ", " (made hand first). With four up cards a
  made pair can never coexist with a draw (a pair leaves at most three distinct ranks
  and three cards of one suit), so the join only matters for "possible straight,
  possible flush".
* Five or more up cards (a community card or an exposed seventh card) still get the
  made-hand announcement; draws are announced only with exactly four up cards, as
  R31 says. A full house among five up cards is announced as its three of a kind, as
  the seed lists only pair, two pair, trips and quads.
* A straight draw is any four distinct ranks that one more rank completes to five in
  a row, open-ended or inside, the ace counting high (T-J-Q-K-A) or low (A-2-3-4-5).
* German follows the seed's words; after a comma "möglicher" is lower case, as the
  seed writes it ("Möglicher Straight, möglicher Flush").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

__all__ = ["Announcement", "LANGUAGES", "describe", "render", "announce"]

Kind = Literal["pair", "two_pair", "trips", "quads"]
Draw = Literal["straight", "flush"]

LANGUAGES = ("en", "de")


class Announcement(msgspec.Struct, frozen=True, kw_only=True):
    """Language-neutral announcement of one player's up cards.

    ``kind``: the made combination or ``None``; ``rank``: its rank 0..12 (2..A), the
    higher pair for two pair, ``None`` without a made combination; ``draws``: a subset
    of ``("straight", "flush")`` in that order (both = a straight-flush draw).
    """

    kind: Kind | None = None
    rank: int | None = None
    draws: tuple[Draw, ...] = ()


# Five-rank windows as 13-bit rank masks, ace low (wheel) to ace high (broadway).
_WINDOWS = (0b1_0000_0000_1111,) + tuple(0b11111 << low for low in range(9))


def _is_straight_draw(ranks: set[int]) -> bool:
    if len(ranks) != 4:
        return False
    mask = 0
    for r in ranks:
        mask |= 1 << r
    return any(mask & w == mask for w in _WINDOWS)


def describe(up_cards: Sequence[int]) -> Announcement | None:
    """The announcement for a player's up cards, or ``None`` when there is nothing to say.

    Nothing is announced for fewer than two up cards (R30).
    """
    n = len(up_cards)
    if n < 2:
        return None
    counts: dict[int, int] = {}
    for c in up_cards:
        counts[c >> 2] = counts.get(c >> 2, 0) + 1
    top = max(counts.values())
    kind: Kind | None = None
    rank: int | None = None
    if top >= 4:
        kind, rank = "quads", max(r for r, k in counts.items() if k >= 4)
    elif top == 3:
        kind, rank = "trips", max(r for r, k in counts.items() if k == 3)
    elif top == 2:
        paired = [r for r, k in counts.items() if k == 2]
        kind = "two_pair" if len(paired) >= 2 else "pair"
        rank = max(paired)
    draws: list[Draw] = []
    if n == 4:
        if _is_straight_draw(set(counts)):
            draws.append("straight")
        if len({c & 3 for c in up_cards}) == 1:
            draws.append("flush")
    if kind is None and not draws:
        return None
    return Announcement(kind=kind, rank=rank, draws=tuple(draws))


_PLURAL = {
    "en": ("twos", "threes", "fours", "fives", "sixes", "sevens", "eights", "nines",
           "tens", "jacks", "queens", "kings", "aces"),
    "de": ("Zweier", "Dreier", "Vierer", "Fünfer", "Sechser", "Siebener", "Achter",
           "Neuner", "Zehner", "Buben", "Damen", "Könige", "Asse"),
}
_MADE = {
    "en": {"pair": "pair of {}", "two_pair": "two pair, {}", "trips": "three {}",
           "quads": "four {}"},
    "de": {"pair": "Ein Paar {}", "two_pair": "Zwei Paare, {}", "trips": "Drilling {}",
           "quads": "Poker {}"},
}
# (first phrase, phrase after a comma)
_DRAW = {
    "en": {"straight": ("possible straight", "possible straight"),
           "flush": ("possible flush", "possible flush")},
    "de": {"straight": ("Möglicher Straight", "möglicher Straight"),
           "flush": ("Möglicher Flush", "möglicher Flush")},
}


def render(announcement: Announcement, lang: str = "en") -> str:
    """Text of an announcement in ``"en"`` or ``"de"`` (the seed's German words)."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; expected one of {LANGUAGES}")
    parts: list[str] = []
    if announcement.kind is not None:
        if announcement.rank is None:
            raise ValueError("an announcement with a kind needs a rank")
        parts.append(_MADE[lang][announcement.kind].format(_PLURAL[lang][announcement.rank]))
    for draw in announcement.draws:
        first, later = _DRAW[lang][draw]
        parts.append(later if parts else first)
    if not parts:
        raise ValueError("empty announcement")
    return ", ".join(parts)


def announce(up_cards: Sequence[int], lang: str = "en") -> str | None:
    """What the dealer says about these up cards in ``lang``, or ``None``."""
    a = describe(up_cards)
    return None if a is None else render(a, lang)
