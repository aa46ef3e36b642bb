"""The names of made hands in English and German, for hand histories.

English is the domain's own text (``hand_ranking.describe_high``, what ``HandShown``
carries).  German follows the words of the dealer's announcements (R30: "Ein Paar",
"Zwei Paare", "Drilling", "Poker") and the usual German of online rooms for the rest.
A high value is ``category << 20`` plus five 4-bit ranks, most significant first
(``hand_ranking.high_value``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .cards import parse_many
from .hand_ranking import describe_high, describe_low, high_category, high_value, low_value

_ONE_DE = ("Zwei", "Drei", "Vier", "Fünf", "Sechs", "Sieben", "Acht", "Neun", "Zehn", "Bube", "Dame", "König", "Ass")
_MANY_DE = ("Zweier", "Dreier", "Vierer", "Fünfer", "Sechser", "Siebener", "Achter", "Neuner", "Zehner",
            "Buben", "Damen", "Könige", "Asse")
_ACE = 12


def _ranks(value: int) -> list[int]:
    return [(value >> (16 - 4 * i)) & 15 for i in range(5)]


def _german_high(value: int) -> str:
    r = _ranks(value)
    names = {
        8: "Royal Flush" if r[0] == _ACE else f"Straight Flush, {_ONE_DE[r[0]]} hoch",
        7: f"Poker {_MANY_DE[r[0]]}",
        6: f"Full House, {_MANY_DE[r[0]]} über {_MANY_DE[r[1]]}",
        5: f"Flush, {_ONE_DE[r[0]]} hoch",
        4: f"Straße, {_ONE_DE[r[0]]} hoch",
        3: f"Drilling {_MANY_DE[r[0]]}",
        2: f"Zwei Paare, {_MANY_DE[r[0]]} und {_MANY_DE[r[1]]}",
        1: f"Ein Paar {_MANY_DE[r[0]]}",
        0: f"Höchste Karte {_ONE_DE[r[0]]}",
    }
    return names[high_category(value)]


def high_name(cards: Sequence[str], lang: str) -> str:
    """The best high hand among ``cards`` (5..8 card texts), named in ``lang``."""
    value = high_value(parse_many(cards))
    return describe_high(value) if lang == "en" else _german_high(value)


def low_name(cards: Sequence[str], lang: str) -> str | None:
    """The 8-or-better low among ``cards`` (None: no low), named in ``lang``."""
    value = low_value(parse_many(cards))
    if value is None:
        return None
    text = describe_low(value)
    return text if lang == "en" else "Low " + text.removesuffix(" low")
