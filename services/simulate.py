"""Random legal play against the pure domain: the engine of property tests, benchmarks
and bot decisions.  Randomness lives here, never in the domain: the caller hands in a
``random.Random``."""

from __future__ import annotations

import random

from studroom.domain.commands import (
    Act, BuyIn, Command, Muck, OpenTable, PostAnte, Show, SitDown, StartHand, Timeout,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import DomainError
from studroom.domain.events import Event
from studroom.domain.table import Table

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)


def choose(table: Table, rng: random.Random, timeout_rate: float = 0.0) -> Command:
    """A legal next command for whoever the table waits on (weighted towards calling)."""
    hand = table.hand
    assert hand is not None
    if rng.random() < timeout_rate:
        return Timeout(turn=table.turn)
    if hand.turn_kind == "ante":
        seat = next(s for s, p in hand.players.items() if not p.posted and not p.folded)
        return PostAnte(seat=seat)
    seat = hand.to_act
    assert seat is not None
    if hand.turn_kind == "show":
        return Muck(seat=seat) if rng.random() < 0.2 else Show(seat=seat)
    opts = options_of(table)
    weights = {"fold": 1, "check": 4, "call": 5, "bet": 2, "raise": 2, "complete": 2, "bring_in": 4}
    action = rng.choices(opts, [weights[o] for o in opts])[0]
    size = rng.choice(("small", "big")) if action in ("bet", "raise") and hand.open_pair and not hand.big_made else None
    return Act(seat=seat, action=action, size=size)


def options_of(table: Table) -> list[str]:
    from studroom.domain.betting import options

    hand = table.hand
    assert hand is not None and hand.to_act is not None
    return options(hand, hand.players[hand.to_act])


def new_table(game: str, players: int, stack: int = 2000, **config: object) -> tuple[Table, list[Event]]:
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game=game, stakes=STAKES, **config)))
    for seat in range(players):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}"))
        events += table.execute(BuyIn(seat=seat, amount=stack))
    return table, events


def play_hand(table: Table, rng: random.Random, timeout_rate: float = 0.0) -> list[Event]:
    """Start a hand from a fresh seed and play it to the end with random legal moves."""
    events = table.execute(StartHand(seed=rng.randbytes(32).hex()))
    while table.hand is not None:
        command = choose(table, rng, timeout_rate)
        try:
            events += table.execute(command)
        except DomainError as refused:
            if refused.code != "must_show":      # R22: the last claimant may not muck
                raise
            events += table.execute(Show(seat=command.seat))  # type: ignore[attr-defined]
    return events


def top_up(table: Table, stack: int) -> list[Event]:
    """Refill busted or short players so that the next hand has everyone."""
    events: list[Event] = []
    assert table.config is not None
    for seat, state in table.seats.items():
        if state.stack < table.config.min_buy_in:
            events += table.execute(BuyIn(seat=seat, amount=stack - state.stack))
    return events
