"""The three games as rule profiles of one engine (rules R1, R2, R6, R9, R11, R12 in
docs/rules.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

DOWN: Final = False
UP: Final = True


@dataclass(frozen=True, slots=True)
class Street:
    """One dealing round and the betting round after it."""

    name: str                    # "3rd" .. "7th" (seven-card), "2nd" .. "5th" (five-card)
    faces: tuple[bool, ...]      # what each player receives, in order: UP or DOWN
    big: bool                    # R11: bets are the big bet on this street
    open_pair_street: bool = False  # R12: an open pair allows a big bet here


@dataclass(frozen=True, slots=True)
class Game:
    name: str
    max_seats: int               # R2
    hi_lo: bool                  # R25
    streets: tuple[Street, ...]

    @property
    def last_street(self) -> int:
        return len(self.streets) - 1

    @property
    def penultimate_street(self) -> int:
        return len(self.streets) - 2


SEVEN_CARD_STREETS: Final = (
    Street("3rd", (DOWN, DOWN, UP), big=False),        # R6: two down, the door card up
    Street("4th", (UP,), big=False, open_pair_street=True),
    Street("5th", (UP,), big=True),
    Street("6th", (UP,), big=True),
    Street("7th", (DOWN,), big=True),                  # R9: the river comes down
)

FIVE_CARD_STREETS: Final = (
    Street("2nd", (DOWN, UP), big=False),              # R6: one down, one up
    Street("3rd", (UP,), big=False, open_pair_street=True),
    Street("4th", (UP,), big=True),
    Street("5th", (UP,), big=True),
)

GAMES: Final = {
    "seven_card_stud": Game("seven_card_stud", 8, False, SEVEN_CARD_STREETS),
    "seven_card_stud_hilo": Game("seven_card_stud_hilo", 8, True, SEVEN_CARD_STREETS),
    "five_card_stud": Game("five_card_stud", 10, False, FIVE_CARD_STREETS),
}
