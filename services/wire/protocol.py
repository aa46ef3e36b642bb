"""The wire format of commands and replies.

A request's body is one table command as msgspec JSON: the tagged union
:data:`studroom.domain.commands.TableCommand` (``{"type": "Act", "seat": 3, ...}``).
The reply is a :class:`Reply`: ``{"ok": true, "version": 42}`` or
``{"ok": false, "error": {"code": "not_your_turn", "message": "..."}}``.  Error codes
are the domain's (stable, ``studroom.domain.errors``), plus the service's own below.
"""

from __future__ import annotations

from typing import Final

import msgspec

from studroom.domain.commands import TableCommand


# The services' own error codes (the domain's are in studroom.domain.errors).
BAD_REQUEST: Final = "bad_request"      # a malformed message, or a name that cannot be stored
UNKNOWN_TABLE: Final = "unknown_table"  # no such table (not opened)
CONFLICT: Final = "conflict"            # another writer stored first; the command changed nothing
UNAVAILABLE: Final = "unavailable"      # no service owns the table right now (partition moving)
INTERNAL: Final = "internal"            # the service failed; the command changed nothing
TIMEOUT: Final = "timeout"              # the client got no reply in time (set by the client)
BAD_REPLY: Final = "bad_reply"          # the client got a reply it cannot decode (set by the client)

# Codes a client, a bot or the timer retries (a bounded number of times): each means the
# command changed nothing and the same command may succeed a moment later.
RETRYABLE: Final = frozenset({CONFLICT, UNAVAILABLE, INTERNAL, TIMEOUT})


class ErrorBody(msgspec.Struct, frozen=True):
    code: str
    message: str


class Reply(msgspec.Struct, frozen=True, omit_defaults=True):
    ok: bool
    version: int | None = None
    error: ErrorBody | None = None


_command_decoder = msgspec.json.Decoder(TableCommand)
_reply_decoder = msgspec.json.Decoder(Reply)
_encoder = msgspec.json.Encoder()


def encode_command(command: object) -> bytes:
    return _encoder.encode(command)


def decode_command(data: bytes) -> TableCommand:
    """Raises msgspec.DecodeError / ValidationError on a malformed message."""
    return _command_decoder.decode(data)


def ok(version: int) -> bytes:
    return _encoder.encode(Reply(ok=True, version=version))


def error(code: str, message: str) -> bytes:
    return _encoder.encode(Reply(ok=False, error=ErrorBody(code, message)))


def decode_reply(data: bytes) -> Reply:
    return _reply_decoder.decode(data)
