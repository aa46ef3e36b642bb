"""A finished hand for the replay page, from the event store: what ``studroom replay``
rebuilds (services/disputes/), as one reader may see it.

- an operator: the dealer's full record (every card and its proof) and the verdict of
  the dispute desk's check (every command re-run through the rules, the deck audited);
- a player: the hand as he may see it (domain/seen.py, R23: what the history keeps of
  it, computed the same way), with no more of the verdict than whether the hand is
  consistent (a difference or a deck finding could name a card he may not see).

Either way the record's events carry every card's proof the reader may see and the
hand's commitment (``AntesCollected``), for the browser to check them itself (WebCrypto
SHA-256, as verifier/verify_deck.py does).  The store is read with the console's own
database access, the reader being the session's identity (never a name the browser
sent): the event store is the only place that tells "no such hand" (``unknown_hand``)
from "a hand you did not play" (``forbidden``), which the history cannot (it knows
only the player's own hands).  Blocking reads run in a thread.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import msgspec
from studroom.domain.errors import FORBIDDEN
from studroom.domain.hand_record import NotInHand, record_from_stream
from studroom.domain.hands import NoSuchHand, find
from studroom.domain.names import is_name

from ..disputes.checks import check_hand
from ..disputes.stored_events import NoSuchTable, table_stream
from ..store.layout import STORE_SCHEMA_PREFIX
from ..wire.protocol import BAD_REQUEST, UNKNOWN_HAND
from ..client.table import Refused      # a refusal's code and message, as the console answers any

HAND_IN_PLAY: Final = "hand_in_play"      # the hand is still being played: no replay yet
MOST_HAND: Final = 10**9


def _verdict(check: Any, full: bool) -> dict[str, Any]:
    if not full:
        return {"consistent": check.consistent}
    d, deck = check.difference, check.deck
    return {
        "consistent": check.consistent,
        "rules": None if d is None else {"version": d.index + 1, "why": d.why},
        "deck": None if deck is None else {"fair": deck.fair, "findings": list(deck.findings), "proofs": deck.proofs,
                                           "cards": deck.cards},
    }


def _replay(database_url: str, prefix: str, role: str, name: str, table_id: str, hand_no: int) -> dict[str, Any]:
    try:
        stream = table_stream(database_url, table_id, prefix)
        span = find(stream, hand_no)
    except (NoSuchTable, NoSuchHand) as e:
        raise Refused(UNKNOWN_HAND, f"table {table_id}: {e}") from None
    if span.end is None:
        raise Refused(HAND_IN_PLAY, f"hand {hand_no} at {table_id} is still being played")
    try:
        record = record_from_stream(stream, span, None if role == "operator" else name)
    except NotInHand as e:
        raise Refused(FORBIDDEN, str(e)) from None
    return {"record": msgspec.to_builtins(record), "verdict": _verdict(check_hand(stream, span), record.full)}


async def replay(role: str, name: str, table_id: Any, hand_no: Any, *, database_url: str,
                 prefix: str = STORE_SCHEMA_PREFIX) -> dict[str, Any]:
    """Hand ``hand_no`` of ``table_id`` for ``name`` of ``role`` (the session's, never the
    browser's): ``{"record": HandRecord as JSON, "verdict": {"consistent", and for an
    operator "rules" (None, or where the re-run parts from the record: "version",
    "why") and "deck" (None for a cancelled hand, or "fair", "findings")}}``.
    Refused: ``bad_request``, ``forbidden`` (a spectator; a player not dealt into that
    hand), ``unknown_hand`` (no such table or hand), ``hand_in_play``."""
    if role not in ("player", "operator"):
        raise Refused(FORBIDDEN, f"a {role} replays no hand")
    if not isinstance(table_id, str) or not is_name(table_id):
        raise Refused(BAD_REQUEST, "table is a table id")
    if type(hand_no) is not int or not 1 <= hand_no <= MOST_HAND:
        raise Refused(BAD_REQUEST, "hand_no is a hand number from 1")
    return await asyncio.to_thread(_replay, database_url, prefix, role, name, table_id, hand_no)
