"""A table's whole state as bytes, and back: the event store's snapshots.

``capture(table)`` encodes everything ``Table.replay`` would rebuild (the deck's seed,
the players' hidden cards too: a snapshot is as secret as the events, and stays in
the store); ``restore(data)`` builds the identical table, on which the events after
``table.version`` are then applied.  What is worked out from other fields (the
hand's player lists in order, the deck's order, salts and proofs) is left out and
worked out again when needed.

``FORMAT`` names the encoding: the version below (raise it when ``Table.apply``
changes what an event does) and a digest of the state's field names (a field added
or renamed changes it by itself).  A snapshot of another format is ignored and the
table replayed from its events (docs/design/event-store.md).
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import msgspec

from .config import TableConfig
from .deck import CommittedDeck, ListedDeck
from .events import SeatOffered, TurnStarted
from .games import GAMES
from .hand import HandPlayer, HandState
from .table import SeatState, Table

SNAPSHOT_VERSION: Final = 4     # 2: the floor and R34 (issue 18); 3: the waiting list; 4: up_ranks in base 5

TABLE_FIELDS: Final = (
    "table_id", "config", "seats", "button", "hand_no", "turn", "hand", "version", "last_command_ids",
    "last_turn", "pause_turn", "pause_served", "pause_waiting", "next_config", "paused", "closing", "closed",
    "waiting", "offer",
)
TABLE_DERIVED: Final = ("game",)                    # GAMES[config.game]
HAND_DERIVED: Final = ("_in_order", "_live", "_actors", "_clockwise", "_values")   # from order, players and cards
HAND_OBJECTS: Final = ("players", "deck", "committed")                  # encoded on their own
DECK_FIELDS: Final = ("_seed", "_listed", "_entropy", "_format", "_span")
DECK_DERIVED: Final = ("_order", "_salts", "_root", "_leaves", "_tree", "_places", "_proofs")   # from the five above


def _fingerprint() -> str:
    names = [TABLE_FIELDS, SeatState.FIELDS, HandPlayer.FIELDS, HandState.FIELDS, CommittedDeck.FIELDS,
             ListedDeck.FIELDS]
    return hashlib.sha256(repr(names).encode()).hexdigest()[:12]


FORMAT: Final = f"table-v{SNAPSHOT_VERSION}-{_fingerprint()}"


class TableSnapshot(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    table_id: str | None
    config: TableConfig | None
    seats: dict[int, dict[str, Any]]          # in the table's order
    button: int | None
    hand_no: int
    turn: int
    hand: dict[str, Any] | None
    version: int
    last_command_ids: dict[str, int]
    last_turn: TurnStarted | None
    pause_turn: int | None
    pause_served: bool
    pause_waiting: bool
    next_config: TableConfig | None
    paused: bool
    closing: bool
    closed: bool
    waiting: list[str]
    offer: SeatOffered | None


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(TableSnapshot).decode


def capture(table: Table) -> bytes:
    """The table's whole state, secrets included (for the store only)."""
    return _encode(TableSnapshot(
        table_id=table.table_id, config=table.config,
        seats={seat: _fields(state, SeatState.FIELDS) for seat, state in table.seats.items()},
        button=table.button, hand_no=table.hand_no, turn=table.turn,
        hand=None if table.hand is None else _hand(table.hand),
        version=table.version, last_command_ids=dict(table.last_command_ids), last_turn=table.last_turn,
        pause_turn=table.pause_turn, pause_served=table.pause_served, pause_waiting=table.pause_waiting,
        next_config=table.next_config, paused=table.paused, closing=table.closing, closed=table.closed,
        waiting=list(table.waiting), offer=table.offer,
    ))


def restore(data: bytes) -> Table:
    """The table ``capture`` encoded (raises msgspec errors on bytes it did not make)."""
    s = _decode(data)
    table = Table()
    table.table_id, table.config = s.table_id, s.config
    table.game = None if s.config is None else GAMES[s.config.game]
    for seat, fields in s.seats.items():
        state = SeatState(fields["player"], fields["auto_ante"])
        _set(state, fields)
        table.seats[seat] = state
    table.button, table.hand_no, table.turn = s.button, s.hand_no, s.turn
    table.hand = None if s.hand is None else _restore_hand(s.hand)
    table.version, table.last_turn = s.version, s.last_turn
    table.last_command_ids = dict(s.last_command_ids)
    table.pause_turn, table.pause_served = s.pause_turn, s.pause_served
    table.pause_waiting, table.next_config = s.pause_waiting, s.next_config
    table.paused, table.closing, table.closed = s.paused, s.closing, s.closed
    table.waiting, table.offer = list(s.waiting), s.offer
    return table


def _fields(record: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: _copy(getattr(record, name)) for name in names}


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


def _set(record: Any, fields: dict[str, Any]) -> None:
    for name, value in fields.items():
        setattr(record, name, value)


def _hand(hand: HandState) -> dict[str, Any]:
    skip = HAND_DERIVED + HAND_OBJECTS
    fields = _fields(hand, tuple(n for n in HandState.FIELDS if n not in skip))
    committed = hand.committed
    fields["players"] = [_fields(p, HandPlayer.FIELDS) for p in hand.players.values()]
    fields["committed"] = {
        "seed": committed._seed.hex(),
        "listed": committed._listed,
        "entropy": [e.hex() for e in committed._entropy],
        "format": committed._format,
        "span": committed._span,
    }
    deck = hand.deck
    fields["deck"] = None if deck is committed else list(deck.order)  # type: ignore[attr-defined]
    return fields


def _restore_hand(fields: dict[str, Any]) -> HandState:
    fields = dict(fields)
    players = []
    for p in fields.pop("players"):
        player = HandPlayer(p["seat"], p["player"], p["start_stack"])
        _set(player, p)
        players.append(player)
    hand = HandState(fields["hand_no"], fields["button"], players)
    kept = fields.pop("committed")
    committed = CommittedDeck(bytes.fromhex(kept["seed"]), kept["listed"])
    for entropy in kept["entropy"]:
        committed.mix(bytes.fromhex(entropy))
    committed.fix(kept["format"], kept["span"])
    stub = fields.pop("deck")
    hand.committed = committed
    hand.deck = committed if stub is None else ListedDeck(stub)
    _set(hand, fields)
    hand.set_order(fields["order"])
    hand.changed()
    return hand
