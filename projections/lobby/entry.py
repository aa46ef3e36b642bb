"""The lobby's record of one table: the value of its key (the table id) in KV bucket
``studroom_lobby``, as msgspec JSON.

Only what the public stream says is in it: up cards, shown cards and the number of
face-down cards a player holds, never which they are.  ``version`` and ``seq`` make
applying an event exactly once (docs/design/lobby.md, "Exactly once"): the table's
last event applied, and where its public copy lies in the stream.
"""

from __future__ import annotations

from typing import Final

import msgspec
from studroom.domain.config import Stakes, TableConfig


class SeatRow(msgspec.Struct, omit_defaults=True):
    """Who sits in a seat.  ``stack``: his chips (during a hand: as it began)."""

    seat: int
    player: str
    stack: int = 0
    sitting_out: bool = False
    leaving: bool = False         # leaves when the hand ends


class Turn(msgspec.Struct, omit_defaults=True):
    """The open turn: whose (None: the ante window), what kind, until when (ms since
    the epoch, the table service's clock)."""

    turn: int
    seat: int | None
    kind: str                     # "ante", "act" or "show"
    deadline_ms: int
    to_call: int = 0
    options: list[str] = []


# A player's last action: an Acted action (domain/events.py), or one of these.
NO_ANTE: Final = "no_ante"
LEFT: Final = "left"
SHOW: Final = "show"
MUCK: Final = "muck"


class Player(msgspec.Struct, omit_defaults=True):
    """A player of the running hand as a spectator sees him."""

    seat: int
    player: str
    stack: int                    # chips behind, not put in yet
    bet: int = 0                  # put in this betting round
    up: list[str] = []            # his up cards, in the order dealt
    down: int = 0                 # how many face-down cards he holds (never which)
    shown: list[str] = []         # all his cards, once he showed them (R21)
    folded: bool = False
    all_in: bool = False
    action: str = ""              # his last action (see above)
    amount: int = 0               # its chips: the round's total for a bet, else what he put in
    timed_out: bool = False       # his last turn timed out (R19)
    said_en: str = ""             # the dealer's announcement of his up cards (R30, R31)
    said_de: str = ""
    showed: str = ""              # what his shown cards make ("high / low"), as the table says it
    showed_de: str = ""           # the same in German
    won: int = 0                  # chips the pots gave him


class HandPicture(msgspec.Struct, omit_defaults=True):
    """The hand in play (or the last one, ``over``, until the next starts)."""

    hand_no: int
    button: int
    street: int = -1              # index into the game's streets; -1 before the first deal
    pot: int = 0                  # every chip put in so far, this round's bets included
    players: list[Player] = []    # in dealing order
    community: list[str] = []     # R17: a community card instead of a street
    turn: Turn | None = None
    showdown: bool = False
    over: bool = False            # ended, or cancelled (R5)
    cancelled: bool = False
    dealt: int = 0                # players dealt in (the ante window closed)
    saw_fourth: int = 0           # of them, those dealt 4th street
    partial: bool = False         # picked up mid-hand from the table's view: not in the figures


class Bucket(msgspec.Struct, array_like=True):
    """Five minutes of a table's play: hands ended, their pots, players dealt in and
    those of them who saw 4th street, turns timed out."""

    start_ms: int
    hands: int = 0
    pots: int = 0
    dealt: int = 0
    saw_fourth: int = 0
    timeouts: int = 0


class Figures(msgspec.Struct):
    """What the lobby shows of a table's last hour (``activity.figures``)."""

    seats_taken: int = 0
    seats_free: int = 0
    average_pot: int | None = None          # None: no hand in the last hour
    hands_per_hour: int = 0
    fourth_street_pct: int | None = None    # share of the players dealt in who saw 4th street
    timeouts_per_hour: int = 0


# What the operators made of a table (their events: TablePaused, TableResumed,
# TableClosing, TableClosed).
OPEN: Final = "open"
PAUSED: Final = "paused"          # deals no new hand; the current one finishes
CLOSING: Final = "closing"        # closes when the hand in play ends
CLOSED: Final = "closed"          # every seat cashed out; takes no command


class LobbyEntry(msgspec.Struct, omit_defaults=True):
    table_id: str
    game: str
    stakes: Stakes
    seats: int                    # seat numbers 0..seats-1
    max_players: int              # R2
    min_buy_in: int
    max_buy_in: int
    players: list[SeatRow] = []   # by seat
    waiting: int = 0              # players on the table's waiting list
    hand_no: int = 0              # the hand in play, else the last one started
    running: bool = False         # a hand is under way
    state: str = OPEN             # see above
    configured: TableConfig | None = None   # new settings, from the next hand on (TableConfigured)
    served: bool = True           # in an answer: a table service holds the table (its partition's lease)
    hand: HandPicture | None = None
    hands: int = 0                # hands played to the end at this table
    timeouts: int = 0             # turns that timed out at this table
    activity: list[Bucket] = []   # the last hour, oldest first
    figures: Figures = msgspec.field(default_factory=Figures)   # as of ``updated_ms``
    version: int = 0              # the table's last event applied
    seq: int = 0                  # its public copy's sequence in the public stream
    updated_ms: int = 0           # when JetStream stored that copy
    resyncs: int = 0              # times the entry was rebuilt from the table's own view


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(LobbyEntry)


def encode(entry: LobbyEntry) -> bytes:
    return _encoder.encode(entry)


def decode(data: bytes) -> LobbyEntry:
    """Raises msgspec.DecodeError / ValidationError on a value that is no entry."""
    return _decoder.decode(data)


def seat_row(entry: LobbyEntry, seat: int) -> SeatRow | None:
    return next((row for row in entry.players if row.seat == seat), None)


def in_hand(entry: LobbyEntry, seat: int) -> Player | None:
    hand = entry.hand
    if hand is None:
        return None
    return next((p for p in hand.players if p.seat == seat), None)
