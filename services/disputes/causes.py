"""What command caused the stored events at a place of a table's stream.

Commands are not stored; their events are, and the first event of each command tells
what it was: an ``Acted`` was an ``Act``, a ``TimedOut`` a ``Timeout``, a
``HandStarted`` a ``StartHand`` with the stored seed or deck.  Its ``command_id``
(``"<role>.<name>#<n>"``, domain/command_ids.py) names the sender and his number; a
command without one came from inside the room (hand starts, scripts) and is run as
trusted.  The clock (``now_ms``) is read back from the record (clocks.py).

The floor's commands (an operator's, docs/rules.md "The floor") begin with their own
events (``TableConfigured``, ``TablePaused``, ``TableResumed``, ``TableClosing``,
``TableClosed``); a sit-out or a departure says whose it was by its ``reason``: the
player's own ``SitOut``/``Leave``, the floor's ``SitOutPlayer``/``RemovePlayer``
(by name), the floor's ``CloseTable`` (every seat cashed out).  A seat removed for
sitting out too long (R34) or sat out by his timed-out turn is never a command's
first event: the command that ended the hand, the pause or the turn made it.

Where the first event leaves a choice (an ``AnteSkipped`` was a ``SkipAnte``, a
``Leave`` or the ante window's ``Timeout``; a ``HandStarted``'s button may have been
placed by the starter), :func:`candidates` lists every command it may have been,
most likely first: the re-run takes the one whose events are the record's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec
from studroom.domain.authority import Sender
from studroom.domain.commands import (
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
    ScheduleHand,
    Show,
    SitDown,
    SitOut,
    SitOutPlayer,
    SkipAnte,
    StartHand,
    Timeout,
)
from studroom.domain.events import (
    Acted,
    AntePosted,
    AnteSkipped,
    CardsDealt,
    ChipsBought,
    Event,
    HandMucked,
    HandShown,
    HandStarted,
    LastCardsExposed,
    LeaveRequested,
    PauseEnded,
    PauseStarted,
    PlayerLeft,
    PlayerSatDown,
    SitOutChanged,
    TableClosed,
    TableClosing,
    TableConfigured,
    TableOpened,
    TablePaused,
    TableResumed,
    TimedOut,
    WaitingListJoined,
    WaitingListLeft,
)
from studroom.domain.games import GAMES
from studroom.domain.table import Table

from .clocks import clock_at

ROLES = ("player", "operator", "service")


class Candidate(msgspec.Struct, frozen=True):
    """A command the record may show, and who gave it (None: the room itself)."""

    command: Command
    by: Sender | None = None


def sender_of(stored_id: str | None) -> tuple[Sender | None, str | None]:
    """The sender and his number of a stored ``command_id`` (None, None: trusted)."""
    if stored_id is None:
        return None, None
    key, _, number = stored_id.rpartition("#")
    role, _, name = key.partition(".")
    if role not in ROLES or not name or not number:
        return None, None
    return Sender(role, name), number  # type: ignore[arg-type]


def candidates(stream: Sequence[Event], index: int, table: Table) -> list[Candidate]:
    """The commands that may have caused the events from ``stream[index]`` on, as the
    table before them (``table``) would have been given them; empty when no command
    begins with such an event."""
    first = stream[index]
    by, number = sender_of(first.command_id)
    now = clock_at(stream, index, table, number) if table.config is not None else 0
    nxt = stream[index + 1] if index + 1 < len(stream) else None
    return [Candidate(msgspec.structs.replace(c, command_id=number, now_ms=now), by)
            for c in _commands(first, nxt, table, by)]


def _commands(e: Event, nxt: Event | None, table: Table, by: Sender | None) -> list[Command]:
    """The commands whose first event ``e`` may be (the most frequent looked at first)."""
    if isinstance(e, Acted):
        return [Act(seat=e.seat, action=e.action, size=_size(e, table))]
    if isinstance(e, AntePosted):
        return [PostAnte(seat=e.seat, entropy=e.entropy)]
    if isinstance(e, CardsDealt):
        return _street(e, nxt, table)
    if isinstance(e, (TimedOut, PauseEnded)):
        return [Timeout(turn=e.turn)]
    if isinstance(e, PauseStarted):
        return [ScheduleHand(pause_ms=e.pause_ms)]
    if isinstance(e, HandStarted):
        scripted = e.deck or None
        return [StartHand(seed=e.seed, deck=scripted),
                StartHand(seed=e.seed, deck=scripted, button=e.button)]
    if isinstance(e, TableOpened):
        return [OpenTable(table_id=e.table_id, config=e.config)]
    if isinstance(e, PlayerSatDown):
        return [SitDown(seat=e.seat, player=e.player, auto_ante=e.auto_ante)]
    if isinstance(e, ChipsBought):       # the cashier named the seat's holder (domain/buy_ins.py)
        holder = table.seats.get(e.seat)
        return [BuyIn(seat=e.seat, amount=e.amount, player=holder.player if holder and by else None)]
    if isinstance(e, SitOutChanged):
        return _sit_out(e, table)
    if isinstance(e, (PlayerLeft, LeaveRequested)):
        return _leave(e, table)
    if isinstance(e, TableConfigured):
        return [ConfigureTable(config=e.config)]
    if isinstance(e, TablePaused):
        return [PauseTable()]
    if isinstance(e, TableResumed):
        return [ResumeTable()]
    if isinstance(e, (TableClosing, TableClosed)):
        return [CloseTable()]
    if isinstance(e, AnteSkipped):
        return _ante_skipped(e, nxt, table, by)
    if isinstance(e, HandShown):
        return [Show(seat=e.seat)]
    if isinstance(e, HandMucked):
        return [Muck(seat=e.seat)]
    if isinstance(e, WaitingListJoined):
        return [JoinWaitingList(player=e.player)]
    if isinstance(e, WaitingListLeft) and e.reason == "own":   # the others follow another command
        return [LeaveWaitingList(player=e.player)]
    return []


def _holder(table: Table, seat: int) -> str:
    """The player in ``seat`` (the floor names him); an empty seat names nobody, and
    the command is refused (a stored event for an empty seat is a difference)."""
    holder = table.seats.get(seat)
    return holder.player if holder is not None else ""


def _sit_out(e: SitOutChanged, table: Table) -> list[Command]:
    """R34: the floor's sit-out names the player; the player's own (or an operator's
    by seat) names the seat.  A timed-out turn's is never a command's first event."""
    if e.reason == "timed_out":
        return []
    if e.reason == "operator":
        return [SitOutPlayer(player=_holder(table, e.seat))]
    return [SitOut(seat=e.seat, sitting_out=e.sitting_out)]


def _leave(e: PlayerLeft | LeaveRequested, table: Table) -> list[Command]:
    """The command a departure began with, by its reason (R3, R34)."""
    if e.reason == "removed":
        return [RemovePlayer(player=_holder(table, e.seat))]
    if e.reason == "table_closed":
        return [CloseTable()]
    if e.reason == "sat_out_too_long":       # made by the end of a hand or a pause
        return []
    return [Leave(seat=e.seat)]


def _ante_skipped(e: AnteSkipped, nxt: Event | None, table: Table, by: Sender | None) -> list[Command]:
    if isinstance(nxt, PlayerLeft) and nxt.seat == e.seat:
        return _leave(nxt, table)
    window = Timeout(turn=table.turn)
    if by is not None and by.role == "service":
        return [window]
    return [SkipAnte(seat=e.seat), window] if by is None else [SkipAnte(seat=e.seat)]


def _street(e: CardsDealt, nxt: Event | None, table: Table) -> list[Command]:
    """A live dealer's console: the street's cards as dealt (R28: with the seats whose
    last card came up), or, when the hand has a deck, none (dealt from it)."""
    assert table.game is not None
    exposure = nxt if isinstance(nxt, LastCardsExposed) else None
    last_down = e.street == table.game.last_street and not GAMES[table.game.name].streets[e.street].faces[0]
    exposed = [d.seat for d in e.cards if d.up] if last_down and exposure is not None else []
    mixed = exposure is not None and exposure.skip_betting
    cards = [e.community] if e.community is not None else [d.card or "" for d in e.cards]
    console = DealStreet(cards=cards, exposed=exposed, mixed=mixed)
    has_deck = table.hand is not None and table.hand.deck.size() > 0
    return [console, DealStreet(cards=None, exposed=exposed, mixed=mixed)] if has_deck else [console]


def _size(e: Acted, table: Table) -> Literal["small", "big"] | None:
    """R12: a bet or raise where the turn offered both sizes was big if it raised the
    round's bet by more than the small bet."""
    turn, hand, config = table.last_turn, table.hand, table.config
    if turn is None or hand is None or config is None or not turn.sizes or e.action not in ("bet", "raise"):
        return None
    return "big" if e.to - hand.current_bet > config.stakes.small_bet else "small"
