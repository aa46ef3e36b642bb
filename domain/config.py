"""A table's settings: game, stakes, rake, limits, timers (rules R2, R3, R8, R18, R19,
R27, R34 in docs/rules.md)."""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from .errors import BAD_CONFIG, BAD_STAKES, TOO_MANY_SEATS, UNKNOWN_GAME, DomainError, quoted
from .games import GAMES
from .limits import DEFAULT_MAX_BUY_IN_BIG_BETS, MAX_STAKE, MAX_TABLE_CHIPS, SEATS, TIMER_SECONDS

TimeoutPolicy = Literal["all_in_protection", "check_or_fold"]
SIT_OUT_SECONDS: Final = (1, 86_400)   # R34: how long a seat may sit out before removal: 1 s .. 1 day
SEAT_OFFER_SECONDS: Final = (1, 3600)  # how long a seat offered from the waiting list stays open: 1 s .. 1 h


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
    max_buy_in: int | None = None        # R3: optional table maximum (see buy_in_ceiling)
    action_seconds: int = 10             # R18
    ante_seconds: int = 10               # R5: the ante window
    showdown_seconds: int = 10           # R22: time to decide show or muck
    timeout_policy: TimeoutPolicy = "all_in_protection"   # R19
    auto_deal: bool = True               # online tables deal by themselves; live-dealer
                                         # tables (R28) wait for the console's DealStreet
    sit_out_seconds: int = 600           # R34: sat out longer, a player is removed and cashed out
    seat_offer_seconds: int = 60         # the waiting list: how long a seat offered to its first stays his

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

    @property
    def buy_in_ceiling(self) -> int:
        """R3: the most a seat may hold after a buy-in: the table's ``max_buy_in``, or
        DEFAULT_MAX_BUY_IN_BIG_BETS big bets when it sets none (a decision: the spec's
        maximum is optional, but an unbounded buy-in is chips without bound)."""
        if self.max_buy_in is not None:
            return self.max_buy_in
        return DEFAULT_MAX_BUY_IN_BIG_BETS * self.stakes.big_bet


def too_many_players(game: str) -> DomainError:
    limit = GAMES[game].max_seats
    why = ": ten players cannot reach 7th street from one deck" if limit == 8 else ""
    return DomainError(TOO_MANY_SEATS, f"{game} seats at most {limit} players (R2{why})")


def validate(config: TableConfig) -> None:
    """Refuse settings the rules cannot play with, or out of the room's bounds
    (domain/limits.py): ``unknown_game``, ``bad_stakes`` (chip amounts),
    ``too_many_seats``, ``bad_config`` (timers)."""
    if config.game not in GAMES:
        raise DomainError(UNKNOWN_GAME, f"no game {quoted(config.game)}; games: {', '.join(GAMES)}")
    s = config.stakes
    _bounded(BAD_STAKES, "small_bet", s.small_bet, 2, MAX_STAKE)
    _bounded(BAD_STAKES, "big_bet", s.big_bet, s.small_bet, MAX_STAKE)
    _bounded(BAD_STAKES, "ante", s.ante, 0, MAX_STAKE)
    if s.bring_in is not None:
        _bounded(BAD_STAKES, "bring_in", s.bring_in, 1, s.small_bet - 1)
    _bounded(BAD_STAKES, "rake basis_points", config.rake.basis_points, 0, 10_000)
    if config.rake.cap is not None:
        _bounded(BAD_STAKES, "rake cap", config.rake.cap, 0, MAX_STAKE)
    if config.max_buy_in is not None:
        _bounded(BAD_STAKES, "max_buy_in", config.max_buy_in, config.min_buy_in, MAX_TABLE_CHIPS)
    _bounded(TOO_MANY_SEATS, "seats", config.seats, *SEATS)
    for name in ("action_seconds", "ante_seconds", "showdown_seconds"):
        _bounded(BAD_CONFIG, name, getattr(config, name), *TIMER_SECONDS)
    _bounded(BAD_CONFIG, "sit_out_seconds", config.sit_out_seconds, *SIT_OUT_SECONDS)
    _bounded(BAD_CONFIG, "seat_offer_seconds", config.seat_offer_seconds, *SEAT_OFFER_SECONDS)


def _bounded(code: str, name: str, value: object, low: int, high: int) -> None:
    """Refuse (``code``) a setting that is not a whole number in ``low..high``."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise DomainError(code, f"{name} must be a whole number in {low}..{high}, not {quoted(value)}")
