"""Who may see what (rules R23, R32, R33 in docs/rules.md): the public and the private
copies of an event, and a whole table as one player may see it.

Events are the dealer's view.  What is secret is declared on the event types
(``__secret__`` fields, and ``DealtCard.card`` unless the card is up), so these views
are derived mechanically and a new event type cannot leak by forgetting a rule here.
A card's proof (R32) travels inside its ``DealtCard`` (or beside a community card, a
shown or mucked hand), so it goes exactly where the card goes:

* public: up cards, community cards, shown hands;
* privately to the owner: his down cards;
* privately to each participant of the showdown: a mucked hand (R23);
* to a player by name, who may hold no seat (``__addressee__``): a seat offered to him
  from the waiting list (public too; the private copy reaches him wherever he is);
* nowhere: folded hands, burns, the seed.

A table's view (:func:`table_view`, what a reconnecting player asks for) is built from
the public facts only, plus the viewer's own down cards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from .cards import show, show_many
from .config import TableConfig
from .events import CardsDealt, DealtCard, Event, HandMucked, SeatOffered, SitOutReason, TurnStarted
from .hand import HandPlayer, HandState
from .table import SeatState, Table

TableState = Literal["open", "paused", "closing", "closed"]

_DEFAULTS: dict[type, dict[str, Callable[[], object]]] = {}


def _blank_secrets(event: Event) -> Event:
    secret = type(event).__secret__
    if not secret:
        return event
    return msgspec.structs.replace(event, **{name: make() for name, make in _blanks(type(event)).items()})


def _blanks(cls: type[Event]) -> dict[str, Callable[[], object]]:
    """For each secret field of an event type, a maker of its default (empty) value."""
    blanks = _DEFAULTS.get(cls)  # type: ignore[assignment]
    if blanks is None:
        fields = msgspec.inspect.type_info(cls).fields  # type: ignore[attr-defined]
        blanks = {
            f.name: f.default_factory if f.default is msgspec.NODEFAULT else _constant(f.default)
            for f in fields if f.name in cls.__secret__
        }
        _DEFAULTS[cls] = blanks
    return blanks


def _constant(value: object) -> Callable[[], object]:
    return lambda: value


def _hide(cards: list[DealtCard], owner: int | None) -> list[DealtCard]:
    return [d if d.up or d.seat == owner else DealtCard(d.seat, None, False) for d in cards]


def public(event: Event) -> Event:
    """The copy anyone may see: no down card (nor its proof), no deck, no seed."""
    event = _blank_secrets(event)
    if isinstance(event, CardsDealt):
        return msgspec.structs.replace(event, cards=_hide(event.cards, None))
    return event


def private(event: Event, seat: int) -> Event | None:
    """The copy for the player in ``seat``, or None when it tells him nothing more than
    the public copy does: his own down cards, or a hand mucked at his showdown."""
    if isinstance(event, CardsDealt) and any(d.seat == seat and not d.up for d in event.cards):
        return msgspec.structs.replace(_blank_secrets(event), cards=_hide(event.cards, seat))
    if isinstance(event, HandMucked) and seat in event.participants:
        return event
    return None


def owners_of_private_cards(event: Event) -> list[int]:
    """The seats that get a private copy of this event."""
    if isinstance(event, CardsDealt):
        return sorted({d.seat for d in event.cards if not d.up})
    if isinstance(event, HandMucked):
        return sorted(event.participants)
    return []


def addressee(event: Event) -> tuple[str, int] | None:
    """The player an event goes to by name (its ``__addressee__`` field; he may hold no
    seat, so the seat map cannot address him) and the seat it is about (its copy's
    number), or None.  Such an event holds no secret: his copy is the public one."""
    field = type(event).__addressee__
    if not field:
        return None
    return getattr(event, field), getattr(event, "seat")


# --- a table as one player may see it (a (re)connecting client's ViewTable) ----------


class SeenCard(msgspec.Struct, frozen=True, array_like=True):
    """One of a player's cards as the viewer sees it: ``card`` None is a down card
    that is not his."""

    card: str | None
    up: bool


class SeatView(msgspec.Struct, frozen=True):
    seat: int
    player: str
    stack: int                    # his chips (during a hand: as it began)
    sitting_out: bool
    sitting_out_since_ms: int | None = None   # R34: when he was sat out (removed after the table's limit)
    sit_out_reason: SitOutReason | None = None   # R34: "own", "timed_out" or "operator"


class PlayerInHand(msgspec.Struct, frozen=True):
    seat: int
    player: str
    cards: list[SeenCard]         # in the order dealt
    stack: int                    # chips behind: not put in yet
    bet: int                      # chips put in this betting round
    folded: bool
    all_in: bool


class HandView(msgspec.Struct, frozen=True):
    hand_no: int
    street: int                   # -1 before the first deal
    pot: int                      # every chip put in so far, this round's bets included
    players: list[PlayerInHand]   # dealing order
    community: list[str] = []     # R17: a community card instead of a street


class TableView(msgspec.Struct, frozen=True):
    """A table as the viewer may see it: public state, plus, when he is ``seat``, his
    own down cards (R23, R33); never another player's down card unless he showed it,
    never the deck or the seed."""

    table_id: str
    config: TableConfig
    version: int
    hand_no: int                  # the hand in play, else the last one played
    button: int | None
    seats: list[SeatView]
    seat: int | None = None       # the viewer's seat
    hand: HandView | None = None
    turn: TurnStarted | None = None   # the open turn: whose, what he may do, until when
    state: TableState = "open"    # the floor's: "paused" deals no new hand, "closing" ends with its hand
    next_config: TableConfig | None = None   # the floor's settings for the next hand
    waiting: list[str] = []       # the waiting list, first first (public, as the seats are)
    offer: SeatOffered | None = None   # the seat offered to the first waiting, while open


def seat_of(table: Table, player: str) -> int | None:
    """The seat whose cards are ``player``'s: the one he was dealt in at (he may have
    left during the hand), else the one he sits in."""
    if table.hand is not None:
        for p in table.hand.players.values():
            if p.player == player:
                return p.seat
    for seat, state in table.seats.items():
        if state.player == player:
            return seat
    return None


def table_view(table: Table, seat: int | None) -> TableView:
    """The opened ``table`` as the player in ``seat`` may see it (None: anyone)."""
    assert table.table_id is not None and table.config is not None
    hand = table.hand
    open_turn = table.last_turn if hand is not None and hand.turn_kind is not None else None
    return TableView(
        table_id=table.table_id,
        config=table.config,
        version=table.version,
        hand_no=hand.hand_no if hand is not None else table.hand_no,
        button=hand.button if hand is not None else table.button,
        seats=[_seat_view(s, st) for s, st in sorted(table.seats.items())],
        seat=seat,
        hand=None if hand is None else _hand_view(hand, seat),
        turn=open_turn,
        state=_state(table),
        next_config=table.next_config,
        waiting=list(table.waiting),
        offer=table.offer,
    )


def _seat_view(seat: int, st: SeatState) -> SeatView:
    if not st.sitting_out:
        return SeatView(seat, st.player, st.stack, False)
    return SeatView(seat, st.player, st.stack, True, st.out_since_ms, st.out_reason)


def _state(table: Table) -> TableState:
    if table.closed:
        return "closed"
    if table.closing:
        return "closing"
    return "paused" if table.paused else "open"


def _hand_view(hand: HandState, viewer: int | None) -> HandView:
    players = [hand.players[s] for s in hand.order]
    return HandView(
        hand_no=hand.hand_no,
        street=hand.street,
        pot=sum(p.contributed for p in hand.players.values()),
        players=[_player_view(p, p.seat == viewer) for p in players],
        community=show_many(hand.community),
    )


def _player_view(p: HandPlayer, own: bool) -> PlayerInHand:
    """His cards: the up ones, and the down ones to himself or once he showed them."""
    seen = own or p.showed
    cards = [SeenCard(show(card) if up or seen else None, up) for card, up in zip(p.cards, p.up)]
    return PlayerInHand(p.seat, p.player, cards, p.stack, p.round_bet, p.folded, p.all_in)
