"""What a bot answers when the table waits on its seat: random legal moves.

The move comes from :func:`studroom.domain.simulate.choose`, which picks one of the
turn's own ``options`` and ``sizes`` (the domain's), so it is legal by construction:
the bot knows no rule of its own.  Every answer carries a ``command_id`` made from the turn
number, so that a retry of the same answer is never carried out twice.
"""

from __future__ import annotations

import random
from typing import cast

import msgspec
from studroom.domain import simulate
from studroom.domain.commands import Command, PostAnte, Show
from studroom.domain.config import Stakes
from studroom.domain.events import Event, TableOpened, TurnStarted


class Decisions:
    """One seat's answers, and the table's stakes (for its buy-ins)."""

    def __init__(self, seat: int, player: str, rng: random.Random,
                 stakes: Stakes = simulate.STAKES) -> None:
        self.seat = seat
        self.player = player
        self.rng = rng
        self.stakes = stakes

    def see(self, event: Event) -> None:
        """Follow the table's public events (its stakes)."""
        if type(event) is TableOpened:
            self.stakes = cast(TableOpened, event).config.stakes

    def answer(self, turn: TurnStarted) -> Command:
        """A legal answer to our ``act`` or ``show`` turn."""
        command = simulate.choose(turn, self.rng)
        return msgspec.structs.replace(command, command_id=self.command_id(turn.turn))

    def show(self, turn: int) -> Show:
        """R22: the answer when a muck was refused (``must_show``)."""
        return Show(seat=self.seat, command_id=self.command_id(turn, "show"))

    def post_ante(self, turn: int) -> PostAnte:
        return PostAnte(seat=self.seat, command_id=self.command_id(turn, "ante"))

    def command_id(self, turn: int, what: str = "turn") -> str:
        # Turn numbers never repeat at a table: a retry of this answer carries the
        # same id and is refused (duplicate_command) if the first one got through.
        return f"{self.player}:{turn}:{what}"
