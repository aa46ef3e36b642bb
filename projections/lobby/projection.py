"""A table's public events, one by one, into its lobby entry (a message's events in
order: the lanes and ``studroom watch`` take them apart); and an entry from the
table's own view when the stream cannot bridge a gap.  Pure: no I/O, no clock (the
time of an event is when JetStream stored it, handed in).

Both the lobby service and ``studroom watch`` fold events with :func:`apply`, so a
spectator's terminal and the lobby's bucket show the same thing.  The table's own
events (seats, settings, the operators' states) are in :mod:`.table_events`, the
hand's here; an event type neither knows changes only the entry's version.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, Final

from studroom.domain.events import (
    Acted,
    Announced,
    AntePosted,
    AntesCollected,
    AnteSkipped,
    CardsDealt,
    Event,
    HandCancelled,
    HandEnded,
    HandMucked,
    HandShown,
    HandStarted,
    LastCardsExposed,
    PauseEnded,
    PauseStarted,
    PotAwarded,
    RoundEnded,
    RoundStarted,
    SeatOffered,
    ShowdownStarted,
    TableOpened,
    TimedOut,
    TurnStarted,
)
from studroom.domain.games import GAMES
from studroom.domain.views import PlayerInHand, TableView
from studroom.domain.hand_names import high_name, low_name
from studroom.services.wire import subjects

from .activity import count_hand, count_timeout, figures
from .entry import (
    MUCK,
    NO_ANTE,
    SHOW,
    HandPicture,
    LobbyEntry,
    Player,
    SeatRow,
    Turn,
    in_hand,
    seat_row,
)
from .table_events import TABLE_EVENTS, opened, take_config

FOURTH: Final = "4th"          # the street whose share of players the lobby shows
BETS: Final = frozenset({"complete", "bet", "raise"})   # their amount is the round's total


class NotOpened(Exception):
    """An event of a table the entry does not know yet (no ``TableOpened`` before it)."""


def apply(entry: LobbyEntry | None, event: Event, version: int, seq: int, at_ms: int, *,
          figured: bool = True) -> LobbyEntry:
    """``entry`` with ``event`` (the table's ``version``, stored at ``seq`` of the public
    stream at ``at_ms``) applied: changed in place, or new for ``TableOpened``.  Its
    figures as of the event, unless not ``figured`` (the lanes fold a batch, then
    :func:`refigure` once before the write)."""
    if isinstance(event, TableOpened):
        entry = opened(event)
    elif entry is None:
        raise NotOpened(f"{type(event).__name__} (version {version}) before the table was opened")
    else:
        _APPLY.get(type(event), _unknown)(entry, event, at_ms)
    _stamp(entry, version, seq, at_ms, figured)
    return entry


def refigure(entry: LobbyEntry) -> None:
    """The entry's figures as of its last event (what :func:`apply` gives each event)."""
    entry.figures = figures(entry, entry.updated_ms)


def from_view(view: TableView, previous: LobbyEntry | None, seq: int, at_ms: int) -> LobbyEntry:
    """The entry of a table as its own ``view`` (``ViewTable``, as a service: no down
    card) shows it; the counts and the last hour kept from ``previous``."""
    entry = opened(TableOpened(table_id=view.table_id, config=view.config))
    entry.players = [SeatRow(s.seat, s.player, s.stack, s.sitting_out) for s in view.seats]
    entry.hand_no, entry.state, entry.waiting = view.hand_no, view.state, len(view.waiting)
    if view.hand is not None:
        entry.running = True
        entry.hand = HandPicture(
            hand_no=view.hand.hand_no, button=view.button if view.button is not None else -1,
            street=view.hand.street, pot=view.hand.pot,
            players=[_viewed_player(p) for p in view.hand.players], community=list(view.hand.community),
            turn=None if view.turn is None else _turn(view.turn), partial=True)
    if previous is not None:
        entry.hands, entry.timeouts, entry.activity = previous.hands, previous.timeouts, previous.activity
        entry.resyncs = previous.resyncs
    entry.resyncs += 1
    _stamp(entry, view.version, seq, at_ms)
    return entry


def _stamp(entry: LobbyEntry, version: int, seq: int, at_ms: int, figured: bool = True) -> None:
    entry.version, entry.seq, entry.updated_ms = version, seq, max(at_ms, entry.updated_ms)
    if figured:
        refigure(entry)


@cache
def fourth_street(game: str) -> int:
    """The index of 4th street among the game's streets."""
    return next(i for i, street in enumerate(GAMES[game].streets) if street.name == FOURTH)


def _viewed_player(p: PlayerInHand) -> Player:
    shown = any(c.card is not None and not c.up for c in p.cards)
    return Player(
        seat=p.seat, player=p.player, stack=p.stack, bet=p.bet,
        up=[c.card for c in p.cards if c.up and c.card is not None],
        down=sum(1 for c in p.cards if not c.up),
        shown=[c.card for c in p.cards if c.card is not None] if shown else [],
        folded=p.folded, all_in=p.all_in)


def _turn(e: TurnStarted) -> Turn:
    return Turn(turn=e.turn, seat=e.seat, kind=e.kind, deadline_ms=e.deadline_ms, to_call=e.to_call,
                options=list(e.options))


# --- a hand ---------------------------------------------------------------------------


def _hand_started(entry: LobbyEntry, e: HandStarted, at_ms: int) -> None:
    if entry.configured is not None:
        take_config(entry, entry.configured)
    entry.hand_no, entry.running = e.hand_no, True
    entry.hand = HandPicture(hand_no=e.hand_no, button=e.button,
                             players=[Player(s.seat, s.player, s.stack) for s in e.seats])


def _ante_posted(entry: LobbyEntry, e: AntePosted, at_ms: int) -> None:
    p = in_hand(entry, e.seat)
    if p is not None and entry.hand is not None:
        p.stack -= e.amount
        p.all_in = p.all_in or p.stack == 0
        entry.hand.pot += e.amount


def _ante_skipped(entry: LobbyEntry, e: AnteSkipped, at_ms: int) -> None:
    p = in_hand(entry, e.seat)
    if p is not None:
        p.folded, p.action, p.amount = True, NO_ANTE, 0


def _hand_cancelled(entry: LobbyEntry, e: HandCancelled, at_ms: int) -> None:
    """R5: too few antes; each goes back (and the hand's number with them)."""
    hand = entry.hand
    entry.hand_no, entry.running = e.hand_no - 1, False
    if hand is None:
        return
    for seat, refund in e.refunds.items():
        p = in_hand(entry, seat)
        if p is not None:
            p.stack += refund
            hand.pot -= refund
    hand.turn, hand.over, hand.cancelled = None, True, True


def _antes_collected(entry: LobbyEntry, e: AntesCollected, at_ms: int) -> None:
    """The ante window closed: these seats are dealt in, in dealing order."""
    hand = entry.hand
    if hand is None:
        return
    by_seat = {p.seat: p for p in hand.players}
    hand.players = [by_seat[s] for s in e.seats if s in by_seat]
    hand.dealt, hand.turn = len(hand.players), None


def _cards_dealt(entry: LobbyEntry, e: CardsDealt, at_ms: int) -> None:
    hand = entry.hand
    if hand is None:
        return
    hand.street, hand.turn = e.street, None
    for p in hand.players:                    # a new betting round
        p.bet, p.action, p.amount = 0, "", 0
    for d in e.cards:
        p = in_hand(entry, d.seat)
        if p is None:
            continue
        if d.up and d.card is not None:
            p.up.append(d.card)
        else:
            p.down += 1
    if e.community is not None:
        hand.community.append(e.community)
    if e.street == fourth_street(entry.game):
        seen = {d.seat for d in e.cards}
        hand.saw_fourth = len(seen) if seen else sum(1 for p in hand.players if not p.folded)


def _last_cards_exposed(entry: LobbyEntry, e: LastCardsExposed, at_ms: int) -> None:
    """R28: the others' last cards turned up."""
    for d in e.turned:
        p = in_hand(entry, d.seat)
        if p is not None and d.card is not None:
            p.down -= 1
            p.up.append(d.card)


def _round_started(entry: LobbyEntry, e: RoundStarted, at_ms: int) -> None:
    if entry.hand is not None:
        entry.hand.turn = None


def _turn_started(entry: LobbyEntry, e: TurnStarted, at_ms: int) -> None:
    hand = entry.hand
    if hand is None:
        return
    hand.turn = _turn(e)
    p = in_hand(entry, e.seat) if e.seat is not None else None
    if p is not None:
        p.timed_out = False


def _acted(entry: LobbyEntry, e: Acted, at_ms: int) -> None:
    hand = entry.hand
    p = in_hand(entry, e.seat)
    if hand is None or p is None:
        return
    p.stack -= e.amount
    p.bet += e.amount
    hand.pot += e.amount
    p.folded = p.folded or e.action == "fold"
    p.all_in = p.all_in or p.stack == 0
    p.action, p.amount = e.action, e.to if e.action in BETS else e.amount
    hand.turn = None


def _timed_out(entry: LobbyEntry, e: TimedOut, at_ms: int) -> None:
    """R19: counted for the lobby; what it did comes as its own event (an Acted, a
    HandShown), but for all-in protection, which ends the turn here."""
    entry.timeouts += 1
    count_timeout(entry.activity, at_ms)
    p = in_hand(entry, e.seat)
    if p is not None:
        p.timed_out = True
    if e.outcome == "protected" and entry.hand is not None:
        entry.hand.turn = None
        if p is not None:
            p.all_in = True


def _announced(entry: LobbyEntry, e: Announced, at_ms: int) -> None:
    p = in_hand(entry, e.seat)
    if p is not None:
        p.said_en, p.said_de = e.en, e.de


def _round_ended(entry: LobbyEntry, e: RoundEnded, at_ms: int) -> None:
    """R15: the unmatched part of the top bet goes back."""
    hand = entry.hand
    if hand is None:
        return
    p = in_hand(entry, e.returned_seat) if e.returned_seat is not None else None
    if p is not None:
        p.stack += e.returned
        p.bet -= e.returned
        hand.pot -= e.returned
        p.all_in = p.stack == 0 or (p.all_in and p.timed_out)      # R19: protected stays all-in
    hand.turn = None


def _showdown_started(entry: LobbyEntry, e: ShowdownStarted, at_ms: int) -> None:
    if entry.hand is not None:
        entry.hand.showdown, entry.hand.turn = True, None


def _shown(entry: LobbyEntry, e: HandShown, at_ms: int) -> None:
    p = in_hand(entry, e.seat)
    if p is not None:
        p.shown, p.action, p.amount = list(e.cards), SHOW, 0
        p.showed = e.high if e.low is None else f"{e.high} / {e.low}"
        p.showed_de = _german_showing(entry, e.cards) if e.high else ""
    if entry.hand is not None:
        entry.hand.turn = None


def _german_showing(entry: LobbyEntry, cards: list[str]) -> str:
    """What shown ``cards`` make (with the community card, R17), in German."""
    own = cards + (entry.hand.community if entry.hand is not None else [])
    high, low = high_name(own, "de"), low_name(own, "de") if GAMES[entry.game].hi_lo else None
    return high if low is None else f"{high} / {low}"


def _mucked(entry: LobbyEntry, e: HandMucked, at_ms: int) -> None:
    p = in_hand(entry, e.seat)
    if p is not None:
        p.action, p.amount = MUCK, 0
    if entry.hand is not None:
        entry.hand.turn = None


def _pot_awarded(entry: LobbyEntry, e: PotAwarded, at_ms: int) -> None:
    for share in (e.high, e.low):
        for seat, chips in share.items():
            p = in_hand(entry, seat)
            if p is not None:
                p.won += chips


def _hand_ended(entry: LobbyEntry, e: HandEnded, at_ms: int) -> None:
    """Final stacks; the hand counts in the figures (unless picked up midway)."""
    for seat, stack in e.stacks.items():
        row = seat_row(entry, seat)
        if row is not None:
            row.stack = stack
        p = in_hand(entry, seat)
        if p is not None:
            p.stack, p.bet = stack, 0
    entry.hand_no, entry.running = e.hand_no, False
    entry.hands += 1
    hand = entry.hand
    if hand is None:
        return
    hand.turn, hand.over = None, True
    if not hand.partial:
        count_hand(entry.activity, at_ms, hand.pot, hand.dealt, hand.saw_fourth)


def _unknown(entry: LobbyEntry, e: Event, at_ms: int) -> None:
    """An event type the lobby shows nothing of (a newer domain's): only its version
    counts, so the lobby keeps going."""


_APPLY: Final[dict[type[Event], Callable[[LobbyEntry, Any, int], None]]] = TABLE_EVENTS | {
    HandStarted: _hand_started, AntePosted: _ante_posted, AnteSkipped: _ante_skipped,
    HandCancelled: _hand_cancelled, AntesCollected: _antes_collected, CardsDealt: _cards_dealt,
    LastCardsExposed: _last_cards_exposed, RoundStarted: _round_started, TurnStarted: _turn_started,
    Acted: _acted, TimedOut: _timed_out, Announced: _announced, RoundEnded: _round_ended,
    ShowdownStarted: _showdown_started, HandShown: _shown, HandMucked: _mucked, PotAwarded: _pot_awarded,
    HandEnded: _hand_ended,
}

UNREAD: Final[frozenset[type[Event]]] = frozenset({PauseStarted, PauseEnded, SeatOffered})
"""The table's event types the fold reads nothing of (the pause before a hand, a seat
offered from the waiting list): each changes only the entry's version.  The lobby's
consumer still receives them (:func:`public_subjects`): they travel in the messages
of the events around them (one message per commit), and a message left out would be
a version gap, read back from the stream at more cost than receiving it
(docs/design/lobby.md, "Cost")."""

READ: Final[frozenset[type[Event]]] = frozenset(_APPLY) | {TableOpened}
"""What the fold reads: every event type the domain has but :data:`UNREAD`
(tests/projections/lobby/test_lobby_projection.py proves the two cover the domain)."""


def public_subjects() -> str:
    """What the lobby's consumer receives of the public stream: every message.  A
    subject names no event type, only who else wants the message (its mark:
    ``event_messages``), and nearly every message holds an event the fold reads
    (:data:`READ`); what it could leave out (:data:`UNREAD`) is too rare to pay for
    (above)."""
    return subjects.all_public_events()
