"""The relay's messages, as every reader and writer sees them: a run of ONE table's
consecutive events in one message (docs/design/relay.md, "One message per commit").

Subject
    public   ``studroom.pub.<table>.<mark>``: the mark names the services that want the
             message (:data:`INTERESTS`): ``turn`` (it holds a turn or a pause: the
             timer), ``left`` (a ``PlayerLeft``: the cashier), both as ``turn_left``,
             or ``plain``; a filtered consumer takes the marks of its interest
             (:func:`marked_subjects`) and the server sends it nothing else.
    private  ``studroom.priv.<player>.<table>``: one event's copy for one seat.
Body
    a JSON array of the events (their public views, or a seat's private copy), in
    version order.  A message of the first format (before 2026-12-03) is one event, a
    JSON object: :func:`decode_events` reads both, so a stream written before reads on.
Headers
    ``Studroom-Version``  the table's version after the message's LAST event (so the
                          i-th of n events is version ``last - n + 1 + i``)
    ``Studroom-Events``   the events' types, comma-separated, in order
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

import msgspec
from studroom.domain.events import Event, PauseStarted, PlayerLeft, TableEvent, TurnStarted

from . import subjects

VERSION_HEADER: Final = subjects.VERSION_HEADER
EVENTS_HEADER: Final = subjects.EVENTS_HEADER
MAX_EVENTS: Final = 64          # events in one message at most (its Studroom-Events header stays short)


class Interest(NamedTuple):
    """Who wants a message with any of ``events`` in it, and its mark's token."""

    token: str
    events: frozenset[str]


TURNS: Final = Interest("turn", frozenset({TurnStarted.__name__, PauseStarted.__name__}))   # the timer
LEAVES: Final = Interest("left", frozenset({PlayerLeft.__name__}))                          # the cashier
INTERESTS: Final = (TURNS, LEAVES)
PLAIN: Final = "plain"          # the mark of a message nobody filters for


def mark_of(types: Iterable[str]) -> str:
    """The subject's last token for a message of events of these types."""
    kinds = set(types)
    return "_".join(i.token for i in INTERESTS if not i.events.isdisjoint(kinds)) or PLAIN


def marks_with(interest: Interest) -> list[str]:
    """Every mark a message ``interest`` wants can carry."""
    others = [i for i in INTERESTS if i is not interest]
    marks = []
    for held in range(2 ** len(others)):
        chosen = {interest.token} | {o.token for n, o in enumerate(others) if held >> n & 1}
        marks.append("_".join(i.token for i in INTERESTS if i.token in chosen))
    return marks


def marked_subjects(interest: Interest) -> list[str]:
    """A filtered consumer's ``filter_subjects``: the messages ``interest`` wants at
    every table, and no other; with the subjects of the first format (the event's type
    as the last token), so that a message stored before an upgrade and not yet acked
    still reaches its consumer (a cash-out is never lost to an upgrade)."""
    return [subjects.public_marked(token) for token in [*marks_with(interest), *sorted(interest.events)]]


def is_wanted(subject: str, interest: Interest) -> bool:
    """Whether a public message's subject says it holds an event ``interest`` wants (a
    consumer the server kept unfiltered gets the others too)."""
    token = subject.rsplit(".", 1)[-1]
    return token in interest.events or interest.token in token.split("_")


# -- writing


def body(parts: Sequence[bytes]) -> bytes:
    """The body of the events whose JSON is ``parts``."""
    return b"[" + b",".join(parts) + b"]"


def headers(last_version: int, types: Sequence[str]) -> dict[str, str]:
    return {VERSION_HEADER: str(last_version), EVENTS_HEADER: ",".join(types)}


class PublicMessage(NamedTuple):
    subject: str
    headers: dict[str, str]
    payload: bytes


_encode = msgspec.json.Encoder().encode


def public_message(table_id: str, first_version: int, events: Sequence[Event]) -> PublicMessage:
    """The public message of a table's events (already public views) from version
    ``first_version`` on: what the relay publishes, for tests and benchmarks that
    publish in its place."""
    types = [type(e).__name__ for e in events]
    return PublicMessage(subjects.public_message(table_id, mark_of(types)),
                         headers(first_version + len(events) - 1, types), body([_encode(e) for e in events]))


# -- reading

def decoding(item: Any) -> Callable[[bytes], list[Any]]:
    """A decoder of a message's body into a list of ``item`` (an event type, or a
    reader's struct of the few fields it reads); a first-format body (one event, a
    JSON object) gives a list of one. It raises msgspec.DecodeError or
    msgspec.ValidationError for anything else."""
    many = msgspec.json.Decoder(list[item]).decode   # type: ignore[valid-type]
    one = msgspec.json.Decoder(item).decode

    def decode(data: bytes) -> list[Any]:
        return [one(data)] if data[:1] == b"{" else many(data)

    return decode


decode_events: Callable[[bytes], list[Event]] = decoding(TableEvent)
"""A message's events."""

UNREADABLE: Final = (msgspec.DecodeError, msgspec.ValidationError, ValueError)
"""What reading a message raises (:func:`events_of`): it is no relay message."""


def first_version(message_headers: Mapping[str, str] | None, count: int) -> int:
    """The table's version after the message's first event (ValueError when its
    headers do not say)."""
    if not message_headers or VERSION_HEADER not in message_headers:
        raise ValueError("a relay message without its Studroom-Version header")
    return int(message_headers[VERSION_HEADER]) - count + 1


def events_of(msg: Any) -> list[tuple[int, Event]]:
    """A nats-py message's events with the table's version after each (raises
    msgspec.DecodeError, msgspec.ValidationError or ValueError)."""
    events = decode_events(msg.data)
    first = first_version(msg.headers, len(events))
    return list(zip(range(first, first + len(events)), events))
