"""The history's wire format: requests and replies (msgspec JSON, request/reply).

A player sends to ``studroom.history.player.<his name>``, an operator to
``studroom.history.operator.<his name>`` (``subjects.history_requests``): the service
reads the sender from the subject, never from the body.  A player asks about himself
only (``player`` left out, or his own name); an operator names any player.  A body is
one request, at most ``protocol.MAX_REQUEST_BYTES``:

    {"type": "Hands"}                                          his latest hands
    {"type": "Hands", "player": "alice", "table_id": "t01", "before_ms": 1764601234567, "limit": 100}
    {"type": "Hand", "table_id": "t01", "hand_no": 17}         the hand as he may see it (R23)
    {"type": "Hand", "table_id": "t01", "hand_no": 17, "format": "text", "lang": "de"}
    {"type": "Sessions"}                                       his sittings, totals per game and stakes

The reply is a :class:`HistoryReply`: ``ok`` with what was asked, or ``error`` with a
stable code (``forbidden``, ``bad_request``, ``unknown_hand``).
"""

from __future__ import annotations

from typing import Literal

import msgspec
from studroom.domain.hand_record import HandRecord
from studroom.services.wire.protocol import ErrorBody

from .queries import MOST_HANDS, HandSummary, Session, StakesTotal


class _Request(msgspec.Struct, frozen=True, tag_field="type", kw_only=True, forbid_unknown_fields=True):
    player: str | None = None            # None: the sender himself


class Hands(_Request, frozen=True, tag=True):
    table_id: str | None = None
    before_ms: int | None = None
    limit: int = 50


class Hand(_Request, frozen=True, tag=True):
    table_id: str
    hand_no: int
    format: Literal["record", "text", "phh"] = "record"
    lang: Literal["en", "de"] = "en"


class Sessions(_Request, frozen=True, tag=True):
    pass


HistoryRequest = Hands | Hand | Sessions


class HistoryReply(msgspec.Struct, frozen=True, omit_defaults=True):
    ok: bool
    error: ErrorBody | None = None
    hands: list[HandSummary] = []
    record: HandRecord | None = None     # a Hand in format "record"
    text: str | None = None              # a Hand as text or PHH
    sessions: list[Session] = []
    totals: list[StakesTotal] = []


_decoder = msgspec.json.Decoder(HistoryRequest)
_reply_decoder = msgspec.json.Decoder(HistoryReply)
_encoder = msgspec.json.Encoder()


def decode_request(data: bytes) -> HistoryRequest:
    """Raises msgspec.DecodeError / ValidationError on a malformed request."""
    request = _decoder.decode(data)
    if isinstance(request, Hands) and not 1 <= request.limit <= MOST_HANDS:
        raise msgspec.ValidationError(f"limit is 1..{MOST_HANDS}")
    return request


def encode(message: HistoryRequest | HistoryReply) -> bytes:
    return _encoder.encode(message)


def decode_reply(data: bytes) -> HistoryReply:
    return _reply_decoder.decode(data)


def refused(code: str, message: str) -> HistoryReply:
    return HistoryReply(ok=False, error=ErrorBody(code, message))
