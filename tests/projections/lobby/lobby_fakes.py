"""The lobby's lanes without servers: a fake public stream of the relay's messages, a
fake bucket with JetStream's compare-and-set, and the lanes over them
(test_lobby_lanes.py, test_lobby_messages.py)."""

from __future__ import annotations

import asyncio
import datetime
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import msgspec
import nats.js.errors
from lobby_tables import T0
from studroom.domain import views
from studroom.domain.events import Event
from studroom.domain.table import Table
from studroom.domain.views import TableView
from studroom.projections.lobby.entry import LobbyEntry, decode
from studroom.projections.lobby.lanes import Lanes
from studroom.projections.lobby.messages import item_of
from studroom.projections.lobby.mirror import Mirror
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import public_message
from subject_matching import matches

TABLE = "t"
_encode = msgspec.json.Encoder().encode


@dataclass
class Msg:
    """A public message as the pull loop hands it over (a direct get reads the same):
    the relay's subject, headers and body, stored at ``seq``."""

    subject: str
    relayed: dict[str, str]        # the relay's headers
    data: bytes
    seq: int
    acked: bool = False
    naks: list[float] = field(default_factory=list)

    @property
    def version(self) -> int:
        """The table's version after its last event."""
        return int(self.relayed[subjects.VERSION_HEADER])

    @property
    def headers(self) -> dict[str, str]:
        stored = datetime.datetime.fromtimestamp(stored_at(self.seq) / 1000, datetime.timezone.utc)
        return {**self.relayed, "Nats-Time-Stamp": stored.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}

    @property
    def reply(self) -> str:
        """JetStream's ack subject: delivered, stream and consumer sequence, stored (ns), pending."""
        return f"$JS.ACK.{subjects.PUBLIC_STREAM}.lobby.{len(self.naks) + 1}.{self.seq}.{self.seq}.{stored_at(self.seq) * 1_000_000}.0"

    def again(self) -> Msg:
        """The same message delivered again."""
        return Msg(self.subject, self.relayed, self.data, self.seq)

    async def ack(self) -> None:
        self.acked = True

    async def nak(self, delay: float | None = None) -> None:
        self.naks.append(delay or 0.0)


def stored_at(seq: int) -> int:
    """When the stream stored message ``seq`` (ms): a second a sequence, as
    ``lobby_tables.entry_of`` stores a second a version."""
    return T0 + 1_000 * seq


def message(first: int, events: Sequence[Event], seq: int | None = None) -> Msg:
    """The relay's message of a table's events (their public views taken here) from
    version ``first`` on, stored at ``seq`` (default: its last version, so that an
    entry's stamp is the one ``lobby_tables.entry_of`` gives)."""
    subject, headers, payload = public_message(TABLE, first, [views.public(e) for e in events])
    return Msg(subject, headers, payload, first + len(events) - 1 if seq is None else seq)


def old_message(version: int, event: Event) -> Msg:
    """A message of the first format (before 2026-12-03): one event, a JSON object, on
    its type's subject, its header ``Studroom-Event``."""
    public = views.public(event)
    kind = type(public).__name__
    return Msg(subjects.public_message(TABLE, kind), {subjects.VERSION_HEADER: str(version), "Studroom-Event": kind},
               _encode(public), version)


class Stream:
    """The public stream of a table's events: the relay's messages, a message's sequence
    its last version (a sequence per event, as if other tables' messages came
    between), and the direct gets the lanes ask it.  The first ``old`` events are one
    first-format message each; the others are cut into runs of ``sizes`` events (in
    turn, again and again).  A message holding a ``lost`` version never reached it (a
    dead letter of the relay)."""

    def __init__(self, events: list[Event], lost: set[int] = frozenset(),  # type: ignore[assignment]
                 sizes: Sequence[int] = (1,), old: int = 0) -> None:
        self.messages: dict[int, Msg] = {}             # by last version
        cut = itertools.cycle(sizes)
        version = 1
        while version <= len(events):
            if version <= old:
                msg = old_message(version, events[version - 1])
            else:
                msg = message(version, events[version - 1:version - 1 + next(cut)])
            if not lost & set(range(version, msg.version + 1)):
                self.messages[msg.version] = msg
            version = msg.version + 1

    def fresh(self, version: int) -> Msg:
        """The message ending at ``version`` delivered again."""
        return self.messages[version].again()

    def in_order(self) -> list[Msg]:
        return sorted(self.messages.values(), key=lambda m: m.seq)

    async def get_msg(self, stream: str, seq: int, subject: str | None = None, next: bool = False,
                      direct: bool = False) -> Any:
        assert direct and stream == subjects.PUBLIC_STREAM and next == (subject is not None)
        for m in self.in_order():
            if (m.seq >= seq and matches(subject or "", m.subject)) if next else m.seq == seq:
                return SimpleNamespace(seq=m.seq, subject=m.subject, headers=m.headers, data=m.data)
        raise nats.js.errors.NotFoundError

    async def stream_info(self, stream: str) -> Any:
        return SimpleNamespace(state=SimpleNamespace(first_seq=min(m.seq for m in self.messages.values())))


class Bucket:
    """A KV bucket refusing a write based on a stale revision; ``before_write`` runs
    before each write (another instance's write landing first)."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[bytes, int]] = {}
        self.revision = 0
        self.writes = 0
        self.before_write: Any = None

    async def get(self, key: str) -> Any:
        if key not in self.values:
            raise nats.js.errors.KeyNotFoundError
        value, revision = self.values[key]
        return SimpleNamespace(value=value, revision=revision)

    async def create(self, key: str, value: bytes) -> int:
        return self._write(key, value, None)

    async def update(self, key: str, value: bytes, last: int) -> int:
        return self._write(key, value, last)

    async def delete(self, key: str, last: int) -> None:
        self._write(key, b"", last)
        del self.values[key]

    def _write(self, key: str, value: bytes, last: int | None) -> int:
        if self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook(self)
        current = self.values.get(key)
        if (current[1] if current else None) != last:
            raise nats.js.errors.KeyWrongLastSequenceError
        return self.put(key, value)

    def put(self, key: str, value: bytes) -> int:
        self.revision += 1
        self.writes += 1
        self.values[key] = (value, self.revision)
        return self.revision

    def entry(self) -> LobbyEntry:
        return decode(self.values[TABLE][0])


class Setup:
    def __init__(self, events: list[Event], lost: set[int] = frozenset(),  # type: ignore[assignment]
                 sizes: Sequence[int] = (1,), old: int = 0) -> None:
        self.events = events
        self.stream = Stream(events, lost, sizes, old)
        self.bucket = Bucket()
        self.views: list[int] = []
        self.lanes = Lanes(self.stream, self.bucket, self._view_of, Mirror())

    async def _view_of(self, table_id: str) -> TableView:
        self.views.append(len(self.events))
        return views.table_view(Table.replay(self.events), None)

    async def deliver(self, msgs: list[Msg]) -> None:
        """Hand ``msgs`` to the lanes at once, as the pull loop does."""
        items = [item_of(m) for m in msgs]
        await asyncio.gather(*(self.lanes.take(*placed) for placed in items if placed is not None))
