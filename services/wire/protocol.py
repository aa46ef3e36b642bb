"""The wire format of requests and replies.

A request's body (at most :data:`MAX_REQUEST_BYTES`) is one :data:`Request` as msgspec
JSON: a table command, the tagged union :data:`studroom.domain.commands.TableCommand`
(``{"type": "Act", "seat": 3, "command_id": "1764601234567890"}``), or
:class:`ViewTable`.  Who sent it is not in the body: the table service reads it from
the subject (docs/design/trust.md).  The reply is a :class:`Reply`:
``{"ok": true, "version": 42}`` (with ``view`` for a ViewTable) or
``{"ok": false, "error": {"code": "not_your_turn", "message": "..."}}``.  Error codes
are the domain's (stable, ``studroom.domain.errors``), plus the service's own below.
"""

from __future__ import annotations

from typing import Final

import msgspec
from studroom.domain.commands import TableCommand
from studroom.domain.views import TableView

# The services' own error codes (the domain's are in studroom.domain.errors).
BAD_REQUEST: Final = "bad_request"      # a malformed message, or a name that cannot be stored
UNKNOWN_TABLE: Final = "unknown_table"  # no such table (not opened)
CONFLICT: Final = "conflict"            # another writer stored first; the command changed nothing
UNAVAILABLE: Final = "unavailable"      # no service owns the table right now (partition moving)
INTERNAL: Final = "internal"            # the service failed; the command changed nothing
TIMEOUT: Final = "timeout"              # the client got no reply in time (set by the client)
BAD_REPLY: Final = "bad_reply"          # the client got a reply it cannot decode (set by the client)
PENDING: Final = "pending"              # a buy-in on its way: the cashier completes or undoes it (not retried)
UNKNOWN_HAND: Final = "unknown_hand"    # no such hand in the history asked for
RATE_LIMITED: Final = "rate_limited"    # beyond the sender's quota (services/wire/door.py): unread, retry after ``retry_after_ms``

# Codes a client, a bot or the timer retries (a bounded number of times): each means the
# command changed nothing and the same command may succeed a moment later.
RETRYABLE: Final = frozenset({CONFLICT, UNAVAILABLE, INTERNAL, TIMEOUT, RATE_LIMITED})


# Every request fits in a few hundred bytes; a larger body is refused unread.
MAX_REQUEST_BYTES: Final = 8192


class ViewTable(msgspec.Struct, frozen=True, tag_field="type", tag=True, forbid_unknown_fields=True):
    """A (re)connecting client asks for his table as he may see it: the reply's
    ``view`` (studroom.domain.views.table_view), his own down cards included."""


Request = TableCommand | ViewTable


class ErrorBody(msgspec.Struct, frozen=True, omit_defaults=True):
    code: str
    message: str
    retry_after_ms: int | None = None    # with ``rate_limited``: when the sender may ask again


class Reply(msgspec.Struct, frozen=True, omit_defaults=True):
    ok: bool
    version: int | None = None
    error: ErrorBody | None = None
    view: TableView | None = None


_request_decoder = msgspec.json.Decoder(Request)
_reply_decoder = msgspec.json.Decoder(Reply)
_encoder = msgspec.json.Encoder()


def encode_command(command: object) -> bytes:
    return _encoder.encode(command)


def decode_request(data: bytes) -> TableCommand | ViewTable:
    """Raises msgspec.DecodeError / ValidationError on a malformed message."""
    return _request_decoder.decode(data)


def ok(version: int) -> bytes:
    return _encoder.encode(Reply(ok=True, version=version))


def refusal(code: str, message: str) -> Reply:
    return Reply(ok=False, error=ErrorBody(code, message))


def error(code: str, message: str) -> bytes:
    return _encoder.encode(refusal(code, message))


def decode_reply(data: bytes) -> Reply:
    return _reply_decoder.decode(data)
