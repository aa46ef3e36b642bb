"""What a bot answers when the table waits on its seat: random legal moves.

The move comes from :func:`studroom.domain.simulate.choose`, which picks one of the
turn's own ``options`` and ``sizes`` (the domain's), so it is legal by construction:
the bot knows no rule of its own.  The answers carry no ``command_id``: the bot's
table client numbers them (docs/design/players.md).
"""

from __future__ import annotations

import random
from typing import cast

from studroom.domain import simulate
from studroom.domain.commands import Command, PostAnte, Show
from studroom.domain.config import Stakes
from studroom.domain.events import Event, TableOpened, TurnStarted


class Decisions:
    """One seat's answers, and the table's stakes (for its buy-ins)."""

    def __init__(self, seat: int, rng: random.Random, stakes: Stakes = simulate.STAKES) -> None:
        self.seat = seat
        self.rng = rng
        self.stakes = stakes

    def see(self, event: Event) -> None:
        """Follow the table's public events (its stakes)."""
        if type(event) is TableOpened:
            self.stakes = cast(TableOpened, event).config.stakes

    def answer(self, turn: TurnStarted) -> Command:
        """A legal answer to our ``act`` or ``show`` turn."""
        return simulate.choose(turn, self.rng)

    def show(self) -> Show:
        """R22: the answer when a muck was refused (``must_show``)."""
        return Show(seat=self.seat)

    def post_ante(self) -> PostAnte:
        return PostAnte(seat=self.seat)
