"""A table's public messages read back from the public stream (direct get), for what the
lobby's consumer no longer brings: the predecessors of a message after a gap, and a
whole entry rebuilt when the bucket's value is missing or not the lobby's own
(docs/design/lobby.md, "Healing").

A message read back carries the same versions (the relay's header), sequence and time
as when the consumer delivered it, so folding it gives the entry the live lobby would
have written.  Its body is decoded only when its events are applied
(:meth:`Stored.events`): a message the entry applied before, or one only checked
for its stamp (:mod:`.ownership`), is not.
"""

from __future__ import annotations

import calendar
import datetime
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

import nats.js.errors
from studroom.domain.events import Event
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import events_of

TIME_HEADER: Final = "Nats-Time-Stamp"          # a direct get's: when JetStream stored it (RFC 3339, ns)


@dataclass(frozen=True, slots=True)
class Stored:
    """One public message of a table (a run of its events) as the stream keeps it."""

    table_id: str
    version: int                   # the table's version after its last event
    seq: int
    at_ms: int
    msg: Any                       # the direct get's message: its body and headers

    def events(self) -> list[tuple[int, Event]]:
        """Its events with the table's version after each (raises as
        ``event_messages.events_of``)."""
        return events_of(self.msg)


class PublicStream:
    def __init__(self, js: Any) -> None:
        self.js = js

    async def after(self, table_id: str, seq: int, before: int | None = None) -> AsyncIterator[Stored]:
        """The table's messages after sequence ``seq`` and before ``before`` (None: to
        the stream's end), in stream order; one without a version is passed over."""
        subject = subjects.public_events(table_id)
        seq += 1
        while before is None or seq < before:
            try:
                msg = await self.js.get_msg(subjects.PUBLIC_STREAM, seq=seq, subject=subject, next=True, direct=True)
            except nats.js.errors.NotFoundError:
                return
            if msg.seq is None or (before is not None and msg.seq >= before):
                return
            stored = _stored(msg)
            if stored is not None:
                yield stored
            seq = msg.seq + 1

    async def at(self, seq: int) -> Stored | None:
        """The message at ``seq`` (None: not in the stream, or without a version)."""
        try:
            msg = await self.js.get_msg(subjects.PUBLIC_STREAM, seq=seq, direct=True)
        except nats.js.errors.NotFoundError:
            return None
        return _stored(msg)

    async def first_seq(self) -> int:
        """The oldest sequence the stream still keeps."""
        return int((await self.js.stream_info(subjects.PUBLIC_STREAM)).state.first_seq)


def version_of(headers: dict[str, str] | None) -> int | None:
    """The table's version after a message's last event (None: its headers do not say)."""
    text = (headers or {}).get(subjects.VERSION_HEADER, "")
    return int(text) if text.isdecimal() else None


def _stored(msg: Any) -> Stored | None:
    version = version_of(msg.headers)
    if version is None or msg.seq is None or not msg.subject:
        return None
    return Stored(subjects.table_of_public(msg.subject), version, msg.seq, stored_ms((msg.headers or {}).get(TIME_HEADER, "")),
                  msg)


def stored_ms(text: str) -> int:
    """When JetStream stored a message, from a direct get's time (RFC 3339 with up to
    nanoseconds), in ms since the epoch, computed as the pull loop's ``stamp_ms`` does
    from a delivery's nanoseconds (through a float): the same message gives the same
    milliseconds whichever way it was read, so a rebuilt entry equals the live one."""
    if not text:
        return 0
    whole, _, rest = text.rstrip("Z").partition(".")
    seconds = calendar.timegm(datetime.datetime.fromisoformat(whole).timetuple())
    ns = seconds * 1_000_000_000 + int((rest[:9] or "0").ljust(9, "0"))
    stamp = datetime.datetime.fromtimestamp(ns / 1_000_000_000.0, datetime.timezone.utc)
    return int(stamp.timestamp() * 1000)
