"""Random legal play against the pure domain: the engine of property tests, benchmarks
and bot decisions.  Randomness lives here, never in the domain: the caller hands in a
``random.Random``."""

from __future__ import annotations

import random
from bisect import bisect
from functools import lru_cache
from itertools import accumulate

from .commands import (
    Act, BuyIn, Command, Muck, OpenTable, PostAnte, Show, SitDown, StartHand, Timeout,
)
from .config import Stakes, TableConfig
from .deck import SEED_BYTES
from .errors import MUST_SHOW, DomainError
from .events import Event, TurnStarted
from .table import Table

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)


WEIGHTS = {"fold": 1, "check": 4, "call": 5, "bet": 2, "raise": 2, "complete": 2, "bring_in": 4,
           "show": 8, "muck": 2}


@lru_cache(maxsize=None)
def _cumulative(options: tuple[str, ...]) -> list[int]:
    return list(accumulate(WEIGHTS[o] for o in options))


def choose(turn: TurnStarted, rng: random.Random) -> Command:
    """A legal answer to a turn, as any client sees it (weighted towards calling; a bet
    or raise is small or big at random where the turn offers both sizes, R12)."""
    seat, options = turn.seat, turn.options
    if seat is None:
        raise ValueError("the ante window is answered with PostAnte by seat")
    cumulative = _cumulative(tuple(options))
    # rng.choices(options, cum_weights=cumulative)[0] without its checks and set-up, for
    # speed: the same draw from the same random number
    action = options[bisect(cumulative, rng.random() * cumulative[-1], 0, len(options) - 1)]
    if action == "show":
        return Show(seat=seat)
    if action == "muck":
        return Muck(seat=seat)
    size = rng.choice(("small", "big")) if turn.sizes and action in ("bet", "raise") else None
    return Act(seat=seat, action=action, size=size)


def new_table(game: str, players: int, stack: int = 2000, **config: object) -> tuple[Table, list[Event]]:
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game=game, stakes=STAKES, **config)))
    for seat in range(players):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}"))
        events += table.execute(BuyIn(seat=seat, amount=stack))
    return table, events


def play_hand(table: Table, rng: random.Random, timeout_rate: float = 0.0) -> list[Event]:
    """Start a hand from a fresh seed and play it to the end with random legal moves."""
    events = table.execute(StartHand(seed=rng.randbytes(SEED_BYTES).hex()))
    turn = _last_turn(events)
    while (hand := table.hand) is not None:
        if timeout_rate and rng.random() < timeout_rate:
            command: Command = Timeout(turn=turn.turn)
        elif turn.kind == "ante":
            command = PostAnte(seat=next(s for s, p in hand.players.items() if not p.posted and not p.folded))
        else:
            command = choose(turn, rng)
        try:
            new = table.execute(command)
        except DomainError as refused:
            if refused.code != MUST_SHOW:        # R22: the last claimant may not muck
                raise
            new = table.execute(Show(seat=command.seat))  # type: ignore[attr-defined]
        events += new
        turn = _last_turn(new) or turn
    return events


def _last_turn(events: list[Event]) -> TurnStarted | None:
    """The turn a command's events started, if any (usually their last event)."""
    for e in reversed(events):
        if type(e) is TurnStarted:
            return e
    return None


def top_up(table: Table, stack: int) -> list[Event]:
    """Refill busted or short players so that the next hand has everyone."""
    events: list[Event] = []
    assert table.config is not None
    for seat, state in table.seats.items():
        if state.stack < table.config.min_buy_in:
            events += table.execute(BuyIn(seat=seat, amount=stack - state.stack))
    return events
