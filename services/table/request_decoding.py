"""A request for a table as the table service receives it: its body decoded and
checked before any table is touched (the size, the table's name, the request's
type), and who sent it.  A bad one is answered ``bad_request`` and changes nothing
(docs/design/table-service.md)."""

from __future__ import annotations

from typing import NamedTuple

import msgspec
from studroom.domain.authority import Sender
from studroom.domain.commands import Command, OpenTable

from ..wire import protocol, subjects
from ..wire.protocol import MAX_REQUEST_BYTES, ViewTable


class BadRequest(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


Request = Command | ViewTable


class Submission(NamedTuple):
    """One request for a table: its body (or the decoded request) and who sent it
    (None: the room's own code, trusted)."""

    table_id: str
    message: bytes | Request
    sender: Sender | None = None


def decode_request(table_id: str, data: bytes | bytearray | memoryview) -> Request:
    """The request in a body for ``table_id``, or :class:`BadRequest`."""
    try:
        subjects.check_name(table_id)
    except subjects.BadName as e:
        raise BadRequest(str(e)) from None
    if len(data) > MAX_REQUEST_BYTES:
        raise BadRequest(f"a request is at most {MAX_REQUEST_BYTES} bytes, not {len(data)}")
    try:
        request = protocol.decode_request(bytes(data))
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise BadRequest(f"not a table request: {e}") from None
    return check_request(table_id, request)


def check_request(table_id: str, request: object) -> Request:
    if not isinstance(request, (Command, ViewTable)):
        raise BadRequest(f"not a table request: {type(request).__name__}")
    if isinstance(request, OpenTable) and request.table_id != table_id:
        raise BadRequest(f"OpenTable names table {request.table_id!r}, sent to {table_id!r}")
    return request
