"""A table's public message as the lobby takes it (one message per commit, a run of
the table's events: ``services/wire/event_messages.py``): waiting in its lane as it
came, its body not decoded (:class:`Item`), then its events applied to an entry
after the entry's version (:func:`applied`).

A message applied before is told from its headers alone (the version after its last
event, :func:`.ordering.seen`), so a redelivery costs no decoding; the others are
decoded when a batch applies them, once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from studroom.domain.events import Event
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import UNREADABLE, events_of
from studroom.services.wire.pull import delivery, ms_of

from .entry import LobbyEntry
from .projection import apply
from .stream import version_of


@dataclass(slots=True)
class Item:
    """One public message of a table, waiting in its lane."""

    version: int                   # the table's version after its last event (its header)
    seq: int                       # its sequence in the public stream
    at_ms: int                     # when JetStream stored it
    msg: Any
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    decoded: list[tuple[int, Event]] | None = None

    def events(self) -> list[tuple[int, Event]]:
        """Its events with the table's version after each, decoded once (a batch folded
        again after a lost compare-and-set takes them as they are); raises as
        ``event_messages.events_of``."""
        if self.decoded is None:
            self.decoded = events_of(self.msg)
        return self.decoded


def item_of(msg: Any) -> tuple[str, Item] | None:
    """The table and lane item of a public message, its body not decoded yet; None when
    it says no version (or is no JetStream delivery)."""
    version, known = version_of(msg.headers), delivery(msg)
    if version is None or known is None:
        return None
    table_id = subjects.table_of_public(msg.subject)
    return table_id, Item(version, known.seq, ms_of(known.stored_ns), msg)


class Message(Protocol):
    """A message delivered (:class:`Item`) or read back (``stream.Stored``)."""

    def events(self) -> list[tuple[int, Event]]: ...


def events_in(message: Message) -> list[tuple[int, Event]]:
    """A message's events with their versions (raises one of :data:`UNREADABLE`; a
    message of no events is unreadable too)."""
    events = message.events()
    if not events:
        raise ValueError("a message of no events")
    return events


def entry_version(entry: LobbyEntry | None) -> int:
    """The version an entry applied (0: no entry)."""
    return entry.version if entry is not None else 0


def applied(entry: LobbyEntry | None, events: list[tuple[int, Event]], seq: int, at_ms: int) -> LobbyEntry:
    """``entry`` with a message's events after its version applied, in order, each
    stamped with the message's ``seq`` and time (the message placed next: its first
    event at most the entry's next version; raises ``projection.NotOpened``)."""
    after = entry_version(entry)
    for version, event in events:
        if version > after:
            entry = apply(entry, event, version, seq, at_ms, figured=False)
    assert entry is not None
    return entry
