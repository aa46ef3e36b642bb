"""The messages of a stored event: its public view, and each private copy addressed
to the player who holds the seat (rules R32, R33); a message that can never be
published becomes a dead letter instead. Pure but for the seat book's reloads from the
store. What goes where, and why: docs/design/relay.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec
from studroom.domain import views

from ..store.port import Notification
from ..wire import subjects
from .dead_letters import DeadLetter, Unpublishable
from .seat_book import SeatBook

DEFAULT_MAX_PAYLOAD = 1024 * 1024   # the NATS server's default; each session sets the server's
# What makes a message unpublishable for good (anything else is retried).
UNPUBLISHABLE = (Unpublishable, subjects.BadName, msgspec.EncodeError)
_HEADER_FRAME = len(b"NATS/1.0\r\n\r\n")
HEADROOM = 4096      # more than our headers ever take: only bodies this close to the limit are measured


class Outgoing(NamedTuple):
    """One message to publish (``table``: the table it is about, for recovery scans)."""

    stream: str
    subject: str
    msg_id: str
    headers: dict[str, str]
    payload: bytes
    table: str


class Letters(NamedTuple):
    """A notification's messages: those to publish, and those set aside."""

    publish: list[Outgoing]
    set_aside: list[DeadLetter]


class Prepared(NamedTuple):
    """A batch read from a store: ``count`` notifications up to id ``last_id``."""

    first_id: int
    last_id: int
    count: int
    messages: list[Outgoing]
    set_aside: list[DeadLetter]


def _event_type(event: Any) -> str:
    tag = getattr(getattr(type(event), "__struct_config__", None), "tag", None)
    return tag if isinstance(tag, str) else type(event).__name__


def dead_letter(message: Outgoing, reason: str) -> DeadLetter:
    """The dead letter of a message the server refused (its id says which event and
    copy: ``S:<n>`` or ``S:<n>:<seat>``)."""
    store, notification, *seat = message.msg_id.split(":")
    return DeadLetter(store, int(notification), message.table, int(message.headers[subjects.VERSION_HEADER]),
                      message.headers[subjects.EVENT_HEADER], int(seat[0]) if seat else None, reason)


def wire_size(headers: dict[str, str], payload: bytes) -> int:
    """What the server counts against its ``max_payload``: headers and body."""
    return _HEADER_FRAME + sum(len(k) + len(v) + 4 for k, v in headers.items()) + len(payload)


class Outbox:
    """The messages of each notification of one store.

    Notification ``n`` of store ``S`` gives the public view on
    ``studroom.pub.<table>.<Event>`` with ``Nats-Msg-Id: S:<n.id>``, and for each seat with
    private cards that seat's copy on ``studroom.priv.<player>.<table>`` with
    ``Nats-Msg-Id: S:<n.id>:<seat>``; an event addressed to a player by name (a seat
    offered from the waiting list) the same way, to him. A message whose subject would not be valid,
    whose seat nobody holds, or that is bigger than ``max_payload`` is set aside."""

    def __init__(self, store_name: str, load: Callable[[str], list[Any]], max_tables: int = 100_000):
        self.name = subjects.check_name(store_name)
        self.seats = SeatBook(load, max_tables)
        self.max_payload = DEFAULT_MAX_PAYLOAD
        self._encode = msgspec.json.Encoder().encode

    def messages(self, n: Notification) -> Letters:
        event = n.event
        seats = self.seats.before(n.stream_id, n.version)
        kind = _event_type(event)
        letters = Letters([], [])
        self._add(letters, n, kind, None, None, views.public(event))
        for seat in views.owners_of_private_cards(event):
            copy = views.private(event, seat)
            if copy is not None:
                self._add(letters, n, kind, seat, seats.holder(seat), copy)
        addressed = views.addressee(event)      # a player named by the event, who may hold no seat
        if addressed is not None:
            player, seat = addressed
            self._add(letters, n, kind, seat, player, views.public(event))
        seats.apply(event)
        return letters

    def _add(self, letters: Letters, n: Notification, kind: str, seat: int | None, player: str | None,
             view: Any) -> None:
        """The public view (``seat`` None) or ``seat``'s copy for ``player``, or its dead letter."""
        try:
            letters.publish.append(self._message(n, kind, seat, player, view))
        except UNPUBLISHABLE as error:
            letters.set_aside.append(DeadLetter.of(self.name, n, kind, seat, str(error)))

    def _message(self, n: Notification, kind: str, seat: int | None, player: str | None,
                 view: Any) -> Outgoing:
        if seat is None:
            stream, subject, msg_id = subjects.PUBLIC_STREAM, subjects.public_event(n.stream_id, kind), f"{self.name}:{n.id}"
        elif player is None:
            raise Unpublishable(f"nobody holds seat {seat} for its private copy")
        else:
            stream, subject = subjects.PRIVATE_STREAM, subjects.private_events(player, n.stream_id)
            msg_id = f"{self.name}:{n.id}:{seat}"
        headers = {
            "Nats-Msg-Id": msg_id,
            "Nats-Expected-Stream": stream,
            subjects.VERSION_HEADER: str(n.version),
            subjects.EVENT_HEADER: kind,
        }
        payload = self._encode(view)
        if len(payload) > self.max_payload - HEADROOM and (size := wire_size(headers, payload)) > self.max_payload:
            raise Unpublishable(f"{size} bytes, more than the server's max_payload of {self.max_payload}")
        return Outgoing(stream, subject, msg_id, headers, payload, n.stream_id)
