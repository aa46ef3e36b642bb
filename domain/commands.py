"""Commands: what someone asks a table to do.  Each either yields events or raises a
:class:`~studroom.domain.errors.DomainError` and changes nothing.

``now_ms`` is the clock, stamped by the table service whatever the sender wrote (the
domain never reads a clock); it only dates turn deadlines.  ``command_id`` numbers a
sender's commands, so that a replayed one is refused (domain/command_ids.py).
"""

from __future__ import annotations

from typing import Literal, Union

import msgspec

from .config import TableConfig
from .events import ActionName


# gc=False: as an event (events.py), a command takes part in no reference cycle
class Command(msgspec.Struct, frozen=True, tag_field="type", kw_only=True, forbid_unknown_fields=True, gc=False):
    command_id: str | None = None
    now_ms: int = 0


class OpenTable(Command, tag=True):
    table_id: str
    config: TableConfig


class SitDown(Command, tag=True):
    seat: int
    player: str
    auto_ante: bool = True        # R5: "I'm in", post the ante for me


class BuyIn(Command, tag=True):
    """Chips into ``seat`` (a buy-in or top-up, R3) paid by ``player``'s account: the
    cashier names the player it debited, and the table credits only a seat he holds
    (domain/buy_ins.py).  ``player`` is required of every sender (domain/authority.py);
    only the room's own trusted callers (scripted hands, simulations, the re-run of a
    record stored before buy-ins named their player) leave it out."""

    seat: int
    amount: int
    player: str | None = None


class SitOut(Command, tag=True):
    seat: int
    sitting_out: bool = True


class Leave(Command, tag=True):
    seat: int


class StartHand(Command, tag=True):
    """Online tables hand in a fresh secret ``seed`` (hex); scripted hands may give the
    ``deck`` order instead; live-dealer tables give neither.  ``button`` overrides R4
    (scripted hands, or the floor placing the first button)."""

    seed: str | None = None
    deck: list[str] | None = None
    button: int | None = None


class ScheduleHand(Command, tag=True):
    """Open the pause before an online table's next hand: ``pause_ms`` from now (the
    table service's own command, trusted only). The timer's ``Timeout`` for it ends the
    pause; the service then starts the hand with its own seed."""

    pause_ms: int


class PostAnte(Command, tag=True):
    """``entropy``: optionally, a random value of the player's (1..32 bytes, hex) that
    the deck is derived from too (R32.4)."""

    seat: int
    entropy: str | None = None


class SkipAnte(Command, tag=True):
    seat: int


class DealStreet(Command, tag=True):
    """Live-dealer console input (R28): the street's cards in dealing order, or none to
    deal from the hand's deck.  ``exposed`` lists seats whose 7th card came face up;
    ``mixed`` says the last cards can no longer be told apart."""

    cards: list[str] | None = None
    exposed: list[int] = []
    mixed: bool = False


class Act(Command, tag=True):
    seat: int
    action: ActionName
    size: Literal["small", "big"] | None = None   # R12: only where the open pair gives a choice


class Timeout(Command, tag=True):
    """R20: names the turn it was set for; ``seat``, when given, must be that turn's."""

    turn: int
    seat: int | None = None


class Show(Command, tag=True):
    seat: int


class Muck(Command, tag=True):
    seat: int


# --- the floor: an operator's table commands (R34; docs/rules.md "The floor") -------


class ConfigureTable(Command, tag=True):
    """New settings, validated as OpenTable's; the game, the seats and ``auto_deal``
    stay as opened.  They take effect at the next hand (at once between hands)."""

    config: TableConfig


class PauseTable(Command, tag=True):
    """No new hand until ResumeTable; the hand in play finishes."""


class ResumeTable(Command, tag=True):
    """The paused table deals again."""


class CloseTable(Command, tag=True):
    """Finish the hand in play, cash every seat out, then refuse every command
    (``table_closed``); the table stays replayable."""


class SitOutPlayer(Command, tag=True):
    """Sit ``player`` out (R34), as his own SitOut would; by name, as the floor knows him."""

    player: str


class RemovePlayer(Command, tag=True):
    """Remove ``player`` as his own Leave would (mid-hand: his hand is folded, R3)."""

    player: str


# --- the waiting list (domain/waiting_list.py) ---------------------------------------


class JoinWaitingList(Command, tag=True):
    """Wait for a seat at this table: a player, as himself (domain/authority.py)."""

    player: str


class LeaveWaitingList(Command, tag=True):
    """Leave the waiting list (an open offer of a seat to him ends with it)."""

    player: str


TableCommand = Union[
    OpenTable, SitDown, BuyIn, SitOut, Leave, StartHand, ScheduleHand, PostAnte, SkipAnte, DealStreet,
    Act, Timeout, Show, Muck, ConfigureTable, PauseTable, ResumeTable, CloseTable, SitOutPlayer, RemovePlayer,
    JoinWaitingList, LeaveWaitingList,
]

COMMAND_TYPES = TableCommand.__args__  # type: ignore[attr-defined]
