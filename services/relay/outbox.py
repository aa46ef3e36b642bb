"""The messages of stored events: the public views of a run of one table's events in
one message (one message per commit, in practice), and each private copy addressed to
the player who holds the seat (rules R32, R33); a message that can never be published
becomes a dead letter instead. Pure but for the seat book's reloads from the store.
What goes where, and why: docs/design/relay.md; the format: ``wire/event_messages.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec
from studroom.domain import views

from ..store.port import Notification
from ..wire import event_messages, subjects
from .dead_letters import DeadLetter, Unpublishable
from .seat_book import SeatBook

DEFAULT_MAX_PAYLOAD = 1024 * 1024   # the NATS server's default; each session sets the server's
# What makes a message unpublishable for good (anything else is retried).
UNPUBLISHABLE = (Unpublishable, subjects.BadName, msgspec.EncodeError)
_HEADER_FRAME = len(b"NATS/1.0\r\n\r\n")
HEADROOM = 4096      # more than our headers ever take (event_messages.MAX_EVENTS types at most)


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
    copy: ``S:<n>`` or ``S:<n>:<seat>``; a public message's ``n`` is its first event's
    notification, its version the last's, its event the types it holds)."""
    store, notification, *seat = message.msg_id.split(":")
    return DeadLetter(store, int(notification), message.table, int(message.headers[subjects.VERSION_HEADER]),
                      message.headers[subjects.EVENTS_HEADER], int(seat[0]) if seat else None, reason)


def wire_size(headers: dict[str, str], payload: bytes) -> int:
    """What the server counts against its ``max_payload``: headers and body."""
    return _HEADER_FRAME + sum(len(k) + len(v) + 4 for k, v in headers.items()) + len(payload)


class _Run:
    """The public views of a table's consecutive events gathered for one message."""

    __slots__ = ("first", "parts", "size", "table", "types", "version")

    def __init__(self, n: Notification) -> None:
        self.first = n.id
        self.table = n.stream_id
        self.version = n.version - 1          # the table's version after the last one gathered
        self.types: list[str] = []
        self.parts: list[bytes] = []
        self.size = 2

    def takes(self, n: Notification, part: bytes, limit: int) -> bool:
        return (n.version == self.version + 1 and len(self.parts) < event_messages.MAX_EVENTS
                and self.size + len(part) + 1 <= limit)

    def add(self, n: Notification, kind: str, part: bytes) -> None:
        self.version = n.version
        self.types.append(kind)
        self.parts.append(part)
        self.size += len(part) + 1


class Outbox:
    """The messages of a store's notifications.

    The public views of a table's consecutive events read together go in one message
    on ``studroom.pub.<table>.<mark>`` with ``Nats-Msg-Id: S:<first n.id>``; for each
    seat with private cards in event ``n``, that seat's copy on
    ``studroom.priv.<player>.<table>`` with ``Nats-Msg-Id: S:<n.id>:<seat>``; an event
    addressed to a player by name (a seat offered from the waiting list) the same way,
    to him. A message whose subject would not be valid, whose seat nobody holds, or
    that is bigger than ``max_payload`` is set aside (a public view alone: the run
    around it goes on in a new message)."""

    def __init__(self, store_name: str, load: Callable[[str], list[Any]], max_tables: int = 100_000):
        self.name = subjects.check_name(store_name)
        self.seats = SeatBook(load, max_tables)
        self.max_payload = DEFAULT_MAX_PAYLOAD
        self.max_public = 0          # the public stream's own message limit (0: none)
        self._encode = msgspec.json.Encoder().encode

    def messages(self, notes: Sequence[Notification], published: Mapping[str, int] | None = None) -> Letters:
        """The messages of ``notes``, in order; ``published``: per table, the version up
        to which its public views are in the stream already (a recovery's scan)."""
        letters, private = Letters([], []), Letters([], [])
        runs: dict[str, _Run] = {}
        for n in notes:
            event = n.event
            seats = self.seats.before(n.stream_id, n.version)
            kind = _event_type(event)
            if published is None or n.version > published.get(n.stream_id, 0):
                self._public(letters, runs, n, kind, event)
            for seat in views.owners_of_private_cards(event):
                copy = views.private(event, seat)
                if copy is not None:
                    self._private(private, n, kind, seat, seats.holder(seat), copy)
            addressed = views.addressee(event)      # a player named by the event, who may hold no seat
            if addressed is not None:
                player, seat = addressed
                self._private(private, n, kind, seat, player, views.public(event))
            seats.apply(event)
        for run in sorted(runs.values(), key=lambda r: r.first):
            letters.publish.append(self._public_message(run))
        # The public messages first: a player hears of a hand before its cards come.
        return Letters(letters.publish + private.publish, letters.set_aside + private.set_aside)

    def _public(self, letters: Letters, runs: dict[str, _Run], n: Notification, kind: str, event: Any) -> None:
        """Gather the event's public view into its table's run (flushed first when it
        does not follow on, or is full), or set it aside. A view too big to share a
        message goes alone, if the server takes it at all (a stream's own limit may
        still refuse it: then it alone is set aside)."""
        limit = min(self.max_payload, self.max_public or self.max_payload) - HEADROOM
        try:
            subjects.check_name(n.stream_id)
            part = self._encode(views.public(event))
            alone = len(part) + 2 > limit
            if alone:
                self._check_size(self._public_headers(n.id, n.version, [kind]), event_messages.body([part]))
        except UNPUBLISHABLE as error:
            letters.set_aside.append(DeadLetter.of(self.name, n, kind, None, str(error)))
            self._flush(letters, runs, n.stream_id)
            return
        run = runs.get(n.stream_id)
        if run is not None and (alone or not run.takes(n, part, limit)):
            self._flush(letters, runs, n.stream_id)
            run = None
        if run is None:
            run = runs[n.stream_id] = _Run(n)
        run.add(n, kind, part)
        if alone:
            self._flush(letters, runs, n.stream_id)

    def _flush(self, letters: Letters, runs: dict[str, _Run], table: str) -> None:
        run = runs.pop(table, None)
        if run is not None:
            letters.publish.append(self._public_message(run))

    def _public_headers(self, first: int, version: int, types: list[str]) -> dict[str, str]:
        return {"Nats-Msg-Id": f"{self.name}:{first}", "Nats-Expected-Stream": subjects.PUBLIC_STREAM,
                **event_messages.headers(version, types)}

    def _public_message(self, run: _Run) -> Outgoing:
        headers = self._public_headers(run.first, run.version, run.types)
        subject = subjects.public_message(run.table, event_messages.mark_of(run.types))
        return Outgoing(subjects.PUBLIC_STREAM, subject, headers["Nats-Msg-Id"], headers,
                        event_messages.body(run.parts), run.table)

    def _private(self, letters: Letters, n: Notification, kind: str, seat: int, player: str | None,
                 view: Any) -> None:
        """``seat``'s copy for ``player``, or its dead letter."""
        try:
            letters.publish.append(self._private_message(n, kind, seat, player, view))
        except UNPUBLISHABLE as error:
            letters.set_aside.append(DeadLetter.of(self.name, n, kind, seat, str(error)))

    def _private_message(self, n: Notification, kind: str, seat: int, player: str | None,
                         view: Any) -> Outgoing:
        if player is None:
            raise Unpublishable(f"nobody holds seat {seat} for its private copy")
        stream, subject = subjects.PRIVATE_STREAM, subjects.private_events(player, n.stream_id)
        msg_id = f"{self.name}:{n.id}:{seat}"
        headers = {"Nats-Msg-Id": msg_id, "Nats-Expected-Stream": stream,
                   **event_messages.headers(n.version, [kind])}
        payload = event_messages.body([self._encode(view)])
        self._check_size(headers, payload)
        return Outgoing(stream, subject, msg_id, headers, payload, n.stream_id)

    def _check_size(self, headers: dict[str, str], payload: bytes) -> None:
        """Unpublishable when the server would refuse the message for its size (only
        bodies close to the limit are measured)."""
        if len(payload) > self.max_payload - HEADROOM and (size := wire_size(headers, payload)) > self.max_payload:
            raise Unpublishable(f"{size} bytes, more than the server's max_payload of {self.max_payload}")
