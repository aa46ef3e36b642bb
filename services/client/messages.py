"""The relay's messages as a player receives them: one table event each (public or
private view), msgspec JSON of the tagged union ``TableEvent``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from studroom.domain.events import Event, TableEvent

_event_decoder = msgspec.json.Decoder(TableEvent)


def decode_event(data: bytes) -> Event:
    """A relay message's body as the event it carries (raises msgspec.DecodeError or
    msgspec.ValidationError for anything else)."""
    return _event_decoder.decode(data)


@dataclass(frozen=True)
class Received:
    """One message as the bot got it (kept for tests)."""

    subject: str
    data: bytes
    event: Event
    at: float
    headers: dict[str, str] | None = None

    @classmethod
    def of(cls, msg: Any, event: Event, at: float) -> Received:
        """``msg``: a nats-py message; ``event``: its body decoded."""
        return cls(msg.subject, msg.data, event, at, dict(msg.headers) if msg.headers else None)
