"""What a bot answers when the table waits on its seat: random legal moves.

The move comes from :func:`studroom.domain.simulate.choose`, which picks one of the
turn's own ``options`` (the domain's), so it is legal by construction.  The one thing
a turn does not say is the size of a bet on an open-pair street (R12: small or big
until a big bet has been made, then big): :class:`Decisions` follows the street's
public events to know.  Every answer carries a ``command_id`` made from the turn
number, so that a retry of the same answer is never carried out twice.
"""

from __future__ import annotations

import random
from typing import cast

import msgspec
from studroom.domain import simulate
from studroom.domain.commands import Command, PostAnte, Show
from studroom.domain.config import Stakes
from studroom.domain.events import Acted, Event, HandStarted, RoundStarted, TableOpened, TurnStarted


class Decisions:
    """One seat's answers, and what it knows of the table's betting (stakes, R12)."""

    def __init__(self, seat: int, player: str, rng: random.Random,
                 stakes: Stakes = simulate.STAKES) -> None:
        self.seat = seat
        self.player = player
        self.rng = rng
        self.stakes = stakes
        self.open_pair = False               # R12: this street allows a big bet ...
        self.big_made = False                # ... until one has been made
        self.current_bet = 0

    @property
    def big_bet_open(self) -> bool:
        """A bet or raise may be big or small now (R12)."""
        return self.open_pair and not self.big_made

    def see(self, event: Event) -> None:
        """Follow the table's public events (the stakes, the street's bets)."""
        kind = type(event)          # decoded events have exact types; faster than isinstance
        if kind is Acted:
            self._acted(cast(Acted, event))
        elif kind is RoundStarted:
            self.open_pair, self.big_made = cast(RoundStarted, event).open_pair, False
            self.current_bet = 0
        elif kind is HandStarted:
            self.open_pair, self.big_made, self.current_bet = False, False, 0
        elif kind is TableOpened:
            self.stakes = cast(TableOpened, event).config.stakes

    def _acted(self, event: Acted) -> None:
        """Follow the round's bet, to know when R12's big bet has been made."""
        if event.action == "bring_in":
            self.current_bet = max(self.current_bet, self.stakes.bring_in_amount)
        elif event.action in ("complete", "bet", "raise"):
            if event.full and event.to - self.current_bet >= self.stakes.big_bet:
                self.big_made = True
            self.current_bet = max(self.current_bet, event.to)

    def answer(self, turn: TurnStarted, big_bet_open: bool) -> Command:
        """A legal answer to our ``act`` or ``show`` turn; ``big_bet_open`` as it was
        when the turn started (:attr:`big_bet_open`)."""
        command = simulate.choose(turn, self.rng, big_bet_open)
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
