"""A table's settings: game, stakes, rake, limits, timers (rules R2, R3, R8, R18, R19, R27)."""

from __future__ import annotations

from typing import Literal

import msgspec

from .errors import BAD_STAKES, TOO_MANY_SEATS, UNKNOWN_GAME, DomainError
from .games import GAMES

TimeoutPolicy = Literal["all_in_protection", "check_or_fold"]


class Stakes(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Chip amounts, integers in the table's chip unit."""

    small_bet: int
    big_bet: int
    ante: int = 0
    bring_in: int | None = None   # R8: None means half the small bet, rounded down

    @property
    def bring_in_amount(self) -> int:
        return self.small_bet // 2 if self.bring_in is None else self.bring_in


class Rake(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """R27: ``basis_points`` of each pot (500 = 5 %), rounded down, at most ``cap`` per hand."""

    basis_points: int = 0
    cap: int | None = None


class TableConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    game: str
    stakes: Stakes
    rake: Rake = Rake()
    seats: int = 10                      # seat numbers 0..seats-1; R2 caps the players
    max_buy_in: int | None = None        # R3: optional table maximum
    action_seconds: int = 10             # R18
    ante_seconds: int = 10               # R5: the ante window
    showdown_seconds: int = 10           # R22: time to decide show or muck
    timeout_policy: TimeoutPolicy = "all_in_protection"   # R19
    auto_deal: bool = True               # online tables deal by themselves; live-dealer
                                         # tables (R28) wait for the console's DealStreet

    @property
    def seat_count(self) -> int:
        return self.seats

    @property
    def max_players(self) -> int:
        """R2: 2..8 players in the seven-card games, 2..10 in five-card stud."""
        return GAMES[self.game].max_seats

    @property
    def min_buy_in(self) -> int:
        """R3: at least ten small bets (seed 004)."""
        return 10 * self.stakes.small_bet


def too_many_players(game: str) -> DomainError:
    limit = GAMES[game].max_seats
    why = ": ten players cannot reach 7th street from one deck" if limit == 8 else ""
    return DomainError(TOO_MANY_SEATS, f"{game} seats at most {limit} players (R2{why})")


def validate(config: TableConfig) -> None:
    """Refuse settings the rules cannot play with (``bad_stakes``, ``too_many_seats``)."""
    game = GAMES.get(config.game)
    if game is None:
        raise DomainError(UNKNOWN_GAME, f"no game {config.game!r}; games: {', '.join(GAMES)}")
    s = config.stakes
    for name, value in (("small_bet", s.small_bet), ("big_bet", s.big_bet), ("ante", s.ante)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise DomainError(BAD_STAKES, f"{name} must be a whole number of chips")
    if s.small_bet < 2 or s.big_bet < s.small_bet or s.ante < 0:
        raise DomainError(BAD_STAKES, "need 2 <= small_bet <= big_bet and ante >= 0")
    if not 0 < s.bring_in_amount < s.small_bet:
        raise DomainError(BAD_STAKES, "the bring-in must be more than 0 and less than the small bet")
    if config.rake.basis_points < 0 or config.rake.basis_points > 10_000 or (
        config.rake.cap is not None and config.rake.cap < 0
    ):
        raise DomainError(BAD_STAKES, "rake must be 0..100 % with a cap of 0 or more")
    if not 2 <= config.seat_count <= 10:
        raise DomainError(TOO_MANY_SEATS, "a table has 2..10 seats")
    if config.max_buy_in is not None and config.max_buy_in < config.min_buy_in:
        raise DomainError(BAD_STAKES, "the maximum buy-in is below the minimum of ten small bets")
