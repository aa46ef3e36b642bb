"""The table's events: what happened, stored forever, replayed to rebuild a table.

Every event is a frozen msgspec Struct in one tagged union (``"type"`` names it on the
wire).  Versioning follows msgspec's rules: a new field gets a default, so old events
still decode; a change of meaning gets a new event type, and old types stay decodable
forever.  ``v`` records the schema version the event was written with.

Events are the DEALER'S VIEW: they carry hidden cards and the deck seed.  What is secret
is declared here, next to the fields, so the views (``views.py``) derive the public and
the private copies mechanically (rule R33):

* ``DealtCard.card`` is hidden unless ``up``; its owner is ``DealtCard.seat``;
* fields listed in an event's ``__secret__`` are never public: the seed, a scripted
  deck, burns and the stub stay in the store; a mucked hand goes privately to the
  showdown's participants (R23).

Every card that leaves the store carries the proof that opens it in the hand's deck
commitment (R32, ``deck.py``), so a proof is as secret as its card.

Rules R23, R32, R33 (docs/rules.md); each event type names the rule it records.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Union

import msgspec

from .config import TableConfig

ActionName = Literal["bring_in", "complete", "fold", "check", "call", "bet", "raise"]
TimeoutOutcome = Literal["fold", "check", "bring_in", "protected", "show"]
EndedOn = Literal["showdown", "fold"]
SitOutReason = Literal["own", "timed_out", "operator"]
LeftReason = Literal["own", "removed", "sat_out_too_long", "table_closed"]
PausePurpose = Literal["next_hand", "sit_out_limit", "seat_offer"]
WaitingLeftReason = Literal["own", "seated", "offer_passed", "table_closed"]


# gc=False, here and on the small structs an event holds: an event takes part in no reference
# cycle (frozen, it holds values and lists of values), so the cycle collector need not track
# it; untracked, it is cheaper to make and to drop (a heads-up hand makes about 60)
class Event(msgspec.Struct, frozen=True, tag_field="type", kw_only=True, gc=False):
    v: int = 1
    command_id: str | None = None   # on the first event of a command that had an id
    __secret__: ClassVar[tuple[str, ...]] = ()
    __addressee__: ClassVar[str] = ""   # a field naming a player who gets a copy though he holds no seat


# --- the table -------------------------------------------------------------------------


class TableOpened(Event, tag=True):
    table_id: str
    config: TableConfig


class PlayerSatDown(Event, tag=True):
    seat: int
    player: str
    auto_ante: bool = True


class ChipsBought(Event, tag=True):
    """A buy-in or top-up between hands (R3)."""

    seat: int
    amount: int


class SitOutChanged(Event, tag=True):
    """R34: ``reason`` says who sat him out (himself, his timed-out turn, an operator);
    ``since_ms`` is when (the command's clock; 0 in events written before 2026-12: such
    a sit-out counts as past any limit).  Sat out, he is dealt no hand."""

    seat: int
    sitting_out: bool
    reason: SitOutReason = "own"
    since_ms: int = 0


class PlayerLeft(Event, tag=True):
    """The seat is empty again; ``cashed_out`` chips left the table with the player.
    ``reason``: he left, an operator removed him, he sat out past the table's limit
    (R34), or the table closed."""

    seat: int
    player: str
    cashed_out: int
    reason: LeftReason = "own"


class TableConfigured(Event, tag=True):
    """An operator's new settings (the whole config): in force from the next hand, at
    once when no hand is in play."""

    config: TableConfig


class TablePaused(Event, tag=True):
    """An operator paused the table: no new hand starts; the hand in play finishes."""


class TableResumed(Event, tag=True):
    """The paused table deals again."""


class TableClosing(Event, tag=True):
    """An operator closed the table during a hand: it closes when the hand ends."""


class TableClosed(Event, tag=True):
    """Every seat is cashed out (their PlayerLeft came first); the table refuses every
    command from now on (``table_closed``) and stays replayable."""


class LeaveRequested(Event, tag=True):
    """A player left (or was removed, ``reason``) during a hand: his hand is folded, he
    is cashed out when it ends."""

    seat: int
    reason: LeftReason = "own"


# --- the waiting list (domain/waiting_list.py) -----------------------------------------


class WaitingListJoined(Event, tag=True):
    """A player joined the table's waiting list, at its end."""

    player: str


class WaitingListLeft(Event, tag=True):
    """A player is off the waiting list: he left it (``own``), took the seat offered
    to him (``seated``), let the offer pass (``offer_passed``), or the table closed."""

    player: str
    reason: WaitingLeftReason = "own"


class SeatOffered(Event, tag=True):
    """The first waiting player is offered ``seat`` until ``until_ms``: meanwhile only
    he may sit down there.  Public, as the list is; he holds no seat, so it also goes to
    his own private subject by name (``__addressee__``, domain/views.py)."""

    __addressee__ = "player"
    player: str
    seat: int
    until_ms: int


# --- a hand ----------------------------------------------------------------------------


class CardProof(msgspec.Struct, frozen=True, gc=False):
    """R32: what opens one place of the hand's deck commitment (``AntesCollected``): the
    place (0 = the top card), its 16-byte salt and, in format 1 only, the Merkle path
    (the siblings' 32-byte hashes from the leaf up, one after the other; empty in
    format 2; ``commitment.py``).  Bytes travel as base64 in JSON."""

    place: int
    salt: bytes
    path: bytes


class HandSeat(msgspec.Struct, frozen=True, gc=False):
    seat: int
    player: str
    stack: int


class HandStarted(Event, tag=True):
    """R32: ``commitment`` is the seed's SHA-256, public before any player adds entropy;
    the seed (and a scripted deck) never leaves the store.  A seeded deck's order is not
    listed: the seed (and the entropy) fix it (``deck.py``)."""

    __secret__ = ("deck", "seed")
    hand_no: int
    button: int
    seats: list[HandSeat]          # everyone dealt in, in dealing order (left of button)
    commitment: str                # SHA-256 of the seed, hex ("": a live dealer's table)
    deck: list[str] = []           # a scripted deck, top first (empty: seeded or live dealer)
    seed: str | None = None        # hex; with a scripted deck, the seed of its salts and reshuffles


class AntePosted(Event, tag=True):
    """``entropy``: the player's random value (hex), mixed into the deck (R32.4)."""

    seat: int
    amount: int
    all_in: bool = False
    entropy: str | None = None


class AnteSkipped(Event, tag=True):
    """R5: the player did not post in time (or declined) and sits out this hand."""

    seat: int


class HandCancelled(Event, tag=True):
    """R5: fewer than two antes; every posted ante goes back."""

    hand_no: int
    reason: str
    refunds: dict[int, int]


class DealtCard(msgspec.Struct, frozen=True, array_like=True, gc=False):
    seat: int
    card: str | None              # None in a public view of a down card
    up: bool
    proof: CardProof | None = None   # R32: travels with the card (None: a live dealer's card)


class CardsDealt(Event, tag=True):
    """One street.  ``community`` is set when rule R17 turns a community card instead."""

    __secret__ = ("burned", "stub")
    street: int                   # index into the game's streets (0 = the first deal)
    cards: list[DealtCard] = []
    community: str | None = None
    community_proof: CardProof | None = None
    burned: list[str] = []
    reshuffled: bool = False      # R17: burns (and stub) were shuffled before this street
    stub: list[str] = []          # after a reshuffle: the new stub order, top first


class LastCardsExposed(Event, tag=True):
    """R28: a live dealer dealt a 7th card face up; the others' last cards are turned
    up too (``turned``, now public), or, when the last cards can no longer be told
    apart, the last betting round is skipped."""

    exposed_seat: int | None
    turned: list[DealtCard] = []
    skip_betting: bool = False


class AntesCollected(Event, tag=True):
    """R5: the ante window closed; these seats are dealt in, in dealing order.  R32: the
    deck is fixed now (the antes' entropy is in): ``deck_root`` commits to its top
    ``deck_size`` places before the first card ("": a live dealer's physical deck), in
    ``deck_format`` (``commitment.py``): 2 publishes the places' leaves (``deck_leaves``,
    32 bytes each, base64 in JSON) and hashes them into the root; 1, the format of
    hands stored before 2026-12-02 (which have no such field), is a Merkle root."""

    seats: list[int]
    deck_root: str = ""
    deck_size: int = 0
    deck_format: int = 1
    deck_leaves: bytes = b""


class RoundStarted(Event, tag=True):
    """A betting round opens.  ``opener`` brings in (R7, first street) or shows the best
    board (R10); ``first`` is who acts first (the next one clockwise if the opener is
    all-in).  ``open_pair``: R12 allows big bets on this street."""

    street: int
    opener: int
    first: int
    bring_in: bool = False
    door_card: str | None = None
    open_pair: bool = False


class RoundEnded(Event, tag=True):
    """R15: the betting round is over; the unmatched part of the top bet goes back."""

    street: int
    returned_seat: int | None = None
    returned: int = 0


class TurnStarted(Event, tag=True):
    """Whose turn it is, what he may do, and until when (ms since the epoch, or since
    the scenario's start).  ``turn`` names the turn: a timeout carries it (R20)."""

    turn: int
    seat: int | None              # None: the ante window (every seat that has not posted)
    kind: Literal["ante", "act", "show"]
    deadline_ms: int
    to_call: int = 0
    options: list[str] = []
    sizes: list[str] = []         # R12: ["small", "big"] when a bet or raise may be either


class PauseStarted(Event, tag=True):
    """The pause before the next hand: it starts at ``deadline_ms`` (the table
    service's ``pause_ms`` after the command that made it due; R34: a table that cannot
    deal only because of sat-out players pauses until the first of them passes the
    table's limit, ``purpose="sit_out_limit"``).  ``turn`` names the
    pause like a turn: the timer's Timeout for it ends it (R20 as for any turn)."""

    turn: int
    deadline_ms: int
    pause_ms: int
    purpose: PausePurpose = "next_hand"   # R34: "sit_out_limit"; the waiting list: "seat_offer"


class PauseEnded(Event, tag=True):
    """The pause ``turn`` is over: the next hand may start at once."""

    turn: int


class Acted(Event, tag=True):
    seat: int
    action: ActionName
    amount: int = 0               # chips this action put in
    to: int = 0                   # the seat's total bet in this round afterwards
    all_in: bool = False
    full: bool = True             # counted as a full bet/raise (R16) for reopening/cap


class TimedOut(Event, tag=True):
    """R19: what a timeout did: ``fold``, ``check``, ``bring_in`` or ``protected``
    (all-in protection: stays in for what he has put in)."""

    turn: int
    seat: int
    outcome: TimeoutOutcome


class Announced(Event, tag=True):
    """R30/R31: what a player's up cards show, language-neutral plus rendered."""

    seat: int
    kind: str | None              # "pair", "two_pair", "trips", "quads" or None
    rank: str | None              # rank letter of the announced cards
    draws: list[str] = []         # "straight", "flush"
    en: str = ""
    de: str = ""


class ShowdownStarted(Event, tag=True):
    order: list[int]              # R21


class HandShown(Event, tag=True):
    seat: int
    cards: list[str]              # all his own cards in the order received
    high: str = ""
    low: str | None = None
    proofs: list[CardProof] = []  # R32: one per card


class HandMucked(Event, tag=True):
    """R22/R23: the cards (and their proofs, R32) are never public: they go privately to
    the showdown's ``participants`` only (their hand histories)."""

    __secret__ = ("cards", "proofs")
    seat: int
    cards: list[str] = []
    proofs: list[CardProof] = []
    participants: list[int] = []  # the seats of the showdown (ShowdownStarted.order)


class PotAwarded(Event, tag=True):
    """R24..R27: one pot (0 = main), its rake, and who won what."""

    pot: int
    amount: int
    rake: int
    eligible: list[int]
    high: dict[int, int]
    low: dict[int, int] = {}


class HandEnded(Event, tag=True):
    """The hand's last event: final stacks.  (Until 2026-12 it revealed the seed, against
    R23; R32 as revised keeps it in the store.)"""

    hand_no: int
    ended_on: EndedOn
    stacks: dict[int, int]
    net: dict[int, int]
    rake: int


TableEvent = Union[
    TableOpened, PlayerSatDown, ChipsBought, SitOutChanged, PlayerLeft, LeaveRequested,
    HandStarted, AntePosted, AnteSkipped, HandCancelled, AntesCollected, CardsDealt,
    LastCardsExposed, RoundStarted, TurnStarted, Acted, TimedOut, Announced, RoundEnded,
    ShowdownStarted, HandShown, HandMucked, PotAwarded, HandEnded, PauseStarted, PauseEnded,
    TableConfigured, TablePaused, TableResumed, TableClosing, TableClosed,
    WaitingListJoined, WaitingListLeft, SeatOffered,
]

EVENT_TYPES: tuple[type[Event], ...] = TableEvent.__args__  # type: ignore[attr-defined]
