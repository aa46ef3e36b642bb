"""A bot's answers, without servers: legal for every turn the domain starts (its own
options and bet sizes)."""

from __future__ import annotations

import random

import pytest
from studroom.domain import simulate, views
from studroom.domain.commands import Act, Muck, PostAnte, Show, StartHand
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.deck import SEED_BYTES
from studroom.domain.errors import MUST_SHOW, DomainError
from studroom.domain.events import Event, TableOpened, TurnStarted
from studroom.domain.table import Table
from studroom.services.players.decisions import Decisions

GAMES = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")


class Seats:
    """One Decisions per seat, fed the table's public events as a bot gets them."""

    def __init__(self, players: int, seed: int) -> None:
        self.of = {seat: Decisions(seat, random.Random(seed * 100 + seat)) for seat in range(players)}

    def see(self, events: list[Event]) -> TurnStarted | None:
        """Feed ``events``; the turn they started, if any."""
        turn = None
        for event in events:
            public = views.public(event)
            for decisions in self.of.values():
                decisions.see(public)
            if isinstance(public, TurnStarted):
                turn = public
        return turn


def _answer(table: Table, seats: Seats, turn: TurnStarted, sizes: dict[str, int]) -> list[Event]:
    """Answer ``turn`` as the bots do; the events the table made of the answer."""
    if turn.kind == "ante":
        hand = table.hand
        assert hand is not None
        return table.execute(PostAnte(seat=next(s for s, p in hand.players.items() if not p.posted and not p.folded)))
    assert turn.seat is not None
    decisions = seats.of[turn.seat]
    command = decisions.answer(turn)
    assert isinstance(command, Act | Show | Muck) and command.seat == turn.seat
    action = command.action if isinstance(command, Act) else type(command).__name__.lower()
    assert action in turn.options, (action, turn.options)      # the domain's options
    if isinstance(command, Act) and command.size is not None:
        sizes[command.size] += 1
    try:
        return table.execute(command)
    except DomainError as refused:
        assert refused.code == MUST_SHOW, refused     # R22: the one refusal a bot expects
        return table.execute(decisions.show())


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("players", [2, 5])
def test_decisions_answer_every_turn_with_a_move_the_table_accepts_R12_sizes_too(game: str, players: int) -> None:
    table, opened = simulate.new_table(game, players)
    seats = Seats(players, seed=players)
    seats.see(opened)
    rng = random.Random(7)
    sizes = {"small": 0, "big": 0}
    for _ in range(200):
        seats.see(simulate.top_up(table, 2000))
        turn = seats.see(table.execute(StartHand(seed=rng.randbytes(SEED_BYTES).hex())))
        while table.hand is not None:
            assert turn is not None
            turn = seats.see(_answer(table, seats, turn, sizes)) or turn
    # the table accepted every answer, small and big bets on open-pair streets too (R12)
    assert sizes["small"] > 0 and sizes["big"] > 0, sizes


def test_the_bot_follows_the_stakes_of_the_table_opened() -> None:
    decisions = Decisions(0, random.Random(1))
    stakes = Stakes(ante=10, bring_in=20, small_bet=50, big_bet=100)
    decisions.see(TableOpened(table_id="t", config=TableConfig(game="seven_card_stud", stakes=stakes)))
    assert decisions.stakes == stakes


def test_answers_leave_their_ids_to_the_client_that_numbers_them() -> None:
    decisions = Decisions(3, random.Random(1))
    turn = TurnStarted(turn=17, seat=3, kind="act", deadline_ms=0, options=["fold", "call"])
    assert decisions.answer(turn).command_id is None
    assert decisions.show() == Show(seat=3)
    assert decisions.post_ante() == PostAnte(seat=3)
