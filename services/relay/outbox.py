"""The messages of a stored event: its public view, and each private copy addressed
to the player who holds the seat (rules R32, R33). Pure but for the seat book's
reloads from the store. What goes where, and why: docs/design/relay.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec
from studroom.domain import views
from ..store.port import Notification
from ..wire import subjects
from .errors import RelayError
from .seat_book import SeatBook


class Outgoing(NamedTuple):
    """One message to publish (``table``: the table it is about, for recovery scans)."""

    stream: str
    subject: str
    msg_id: str
    headers: dict[str, str]
    payload: bytes
    table: str


class Prepared(NamedTuple):
    """A batch read from a store: ``count`` notifications up to id ``last_id``."""

    first_id: int
    last_id: int
    count: int
    messages: list[Outgoing]


def _event_type(event: Any) -> str:
    tag = getattr(getattr(type(event), "__struct_config__", None), "tag", None)
    return tag if isinstance(tag, str) else type(event).__name__


class Outbox:
    """The messages of each notification of one store.

    Notification ``n`` of store ``S`` gives the public view on
    ``studroom.pub.<table>`` with ``Nats-Msg-Id: S:<n.id>``, and for each seat with
    private cards that seat's copy on ``studroom.priv.<player>.<table>`` with
    ``Nats-Msg-Id: S:<n.id>:<seat>``."""

    def __init__(self, store_name: str, load: Callable[[str], list[Any]], max_tables: int = 100_000):
        self.name = subjects.check_name(store_name)
        self.seats = SeatBook(load, max_tables)
        self._encode = msgspec.json.Encoder().encode

    def messages(self, n: Notification) -> list[Outgoing]:
        event, table = n.event, n.stream_id
        seats = self.seats.before(table, n.version)
        kind, version = _event_type(event), str(n.version)
        msg_id = f"{self.name}:{n.id}"
        out = [
            Outgoing(
                subjects.PUBLIC_STREAM,
                subjects.public_events(table),
                msg_id,
                {
                    "Nats-Msg-Id": msg_id,
                    "Nats-Expected-Stream": subjects.PUBLIC_STREAM,
                    "Studroom-Version": version,
                    "Studroom-Event": kind,
                },
                self._encode(views.public(event)),
                table,
            )
        ]
        for seat in views.owners_of_private_cards(event):
            copy = views.private(event, seat)
            if copy is None:
                continue
            player = seats.holder(seat)
            if player is None:
                msg = f"table {table!r} v{seats.version}: nobody in seat {seat} for a private copy"
                raise RelayError(msg)
            seat_id = f"{msg_id}:{seat}"
            out.append(
                Outgoing(
                    subjects.PRIVATE_STREAM,
                    subjects.private_events(player, table),
                    seat_id,
                    {
                        "Nats-Msg-Id": seat_id,
                        "Nats-Expected-Stream": subjects.PRIVATE_STREAM,
                        "Studroom-Version": version,
                        "Studroom-Event": kind,
                    },
                    self._encode(copy),
                    table,
                )
            )
        seats.apply(event)
        return out
