"""Who may give which command at a table: the powers of each role (the trust boundary).

The sender of a command is not in the command: the table service learns it from what
the NATS server authenticated (docs/design/trust.md) and hands it in as a
:class:`Sender`.  Commands without a sender come from inside the room (the table
service's own hand starts, scripted hands) and are trusted.

- A **player** sits down, joins and leaves a waiting list as himself, and posts or skips the ante, acts, shows, mucks,
  sits out and leaves only for the seat he holds.  He never credits chips (a buy-in
  comes through the cashier, from his account) and never starts a hand.
- An **operator** (floor, live dealer, cashier desk) opens, configures, pauses,
  resumes and closes tables, feeds live-dealer input (R28: starts a live table's hand
  and deals its streets), and may sit a player out or remove him (R34).  He credits no chips: money moves through the cashier.
- A **service** has exactly its own command: the timer times out turns (R20), the
  cashier credits chips, naming the player it debited (the table credits only his own
  seat: domain/buy_ins.py).

Rules R20, R28 (docs/rules.md).
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from .commands import (
    Act,
    BuyIn,
    CloseTable,
    Command,
    ConfigureTable,
    DealStreet,
    JoinWaitingList,
    Leave,
    LeaveWaitingList,
    Muck,
    OpenTable,
    PauseTable,
    PostAnte,
    RemovePlayer,
    ResumeTable,
    Show,
    SitDown,
    SitOut,
    SitOutPlayer,
    SkipAnte,
    StartHand,
    Timeout,
)
from .errors import FORBIDDEN, DomainError, quoted
from .names import is_name

Role = Literal["player", "operator", "service"]

# Commands a player gives for the seat he holds; and those he gives as himself, by name.
SEAT_COMMANDS: Final = (PostAnte, SkipAnte, Act, Show, Muck, SitOut, Leave)
OWN_NAME_COMMANDS: Final = (SitDown, JoinWaitingList, LeaveWaitingList)
OPERATOR_COMMANDS: Final = (
    OpenTable, DealStreet, StartHand, SitOut, Leave,
    ConfigureTable, PauseTable, ResumeTable, CloseTable, SitOutPlayer, RemovePlayer,   # the floor
)
SERVICE_COMMANDS: Final = {"timer": (Timeout,), "cashier": (BuyIn,)}


class Sender(msgspec.Struct, frozen=True):
    """An authenticated identity: its role and its name."""

    role: Role
    name: str

    @property
    def key(self) -> str:
        return f"{self.role}.{self.name}"


def _forbidden(sender: Sender, command: Command, why: str) -> DomainError:
    return DomainError(FORBIDDEN, f"{sender.role} {quoted(sender.name)} may not {type(command).__name__}: {why}")


def authorize(command: Command, sender: Sender, seat_holder: dict[int, str], live_dealer: bool) -> None:
    """Raise ``forbidden`` unless ``sender`` may give ``command``.

    ``seat_holder`` maps each taken seat to its player's name; ``live_dealer`` says the
    table waits for a console (R28) rather than dealing by itself."""
    if not is_name(sender.name):
        raise _forbidden(sender, command, "no identity of this room has such a name")
    if sender.role == "player":
        if isinstance(command, OWN_NAME_COMMANDS):
            if command.player != sender.name:
                raise _forbidden(sender, command, f"a player acts only as himself, not as {quoted(command.player)}")
            return
        if isinstance(command, SEAT_COMMANDS):
            seat: int = command.seat  # type: ignore[attr-defined]
            if seat_holder.get(seat) != sender.name:
                raise _forbidden(sender, command, f"seat {seat} is not his")
            return
        raise _forbidden(sender, command, "not a player's command")
    if sender.role == "operator":
        if not isinstance(command, OPERATOR_COMMANDS):
            raise _forbidden(sender, command, "not an operator's command")
        if isinstance(command, StartHand) and (not live_dealer or command.seed is not None or command.deck is not None):
            raise _forbidden(sender, command, "an operator starts only a live-dealer table's hand, with no seed or deck")
        return
    if sender.role == "service":
        if not isinstance(command, SERVICE_COMMANDS.get(sender.name, ())):
            raise _forbidden(sender, command, "not this service's command")
        if isinstance(command, BuyIn) and command.player is None:
            raise _forbidden(sender, command, "a buy-in names the player whose account paid it")
        return
    raise _forbidden(sender, command, f"no role {sender.role!r}")
