"""The relay's messages as a client receives them: a public message holds a run of
one table's events (public views), a private one a seat's copy of one event; both are
read by ``wire/event_messages.py``, the format's one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from studroom.domain.events import Event

from ..wire.event_messages import UNREADABLE, events_of


def read_events(msg: Any) -> list[tuple[int, Event]] | None:
    """A relay message's events (``msg``: a nats-py message), each with the table's
    version after it, in order; None: not a relay message (its body does not decode, or
    its version header is missing)."""
    try:
        return events_of(msg)
    except UNREADABLE:
        return None


@dataclass(frozen=True)
class Received:
    """One event as the bot got it (kept for tests): a message of n events is n of
    these, each with the message's subject, body and headers."""

    subject: str
    data: bytes
    version: int          # the table's version after this event
    event: Event
    at: float
    headers: dict[str, str] | None = None

    @classmethod
    def of(cls, msg: Any, version: int, event: Event, at: float) -> Received:
        """``msg``: a nats-py message; ``version``, ``event``: one of its events."""
        return cls(msg.subject, msg.data, version, event, at, dict(msg.headers) if msg.headers else None)
