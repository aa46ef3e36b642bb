"""The event store port: what the services depend on.

A stream is one table's events, named by the table id; a stream's n-th event has
version n.  ``append`` writes a whole batch of streams in one transaction, or refuses
all of it with :class:`VersionConflict`; every stored event also gets a notification
id, in commit order across the store (the relay's outbox).  A stream may have one
:class:`Snapshot` (its state after some version, written with an append, never in
the notification log).  The adapters are
:mod:`.postgres` and :mod:`.memory`; see docs/design/event-store.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import msgspec

Batch = Sequence[tuple[str, int, Sequence[Any]]]
"""``[(stream_id, expected_version_before, [event, ...]), ...]``."""


class VersionConflict(Exception):
    """Another writer appended to ``stream_id`` first; nothing of the batch was written.

    ``stream_ids`` lists every conflicting stream of the batch found (at least one).
    """

    def __init__(self, stream_id: str, stream_ids: Sequence[str] = ()) -> None:
        super().__init__(f"version conflict on stream {stream_id!r}")
        self.stream_id = stream_id
        self.stream_ids = tuple(stream_ids) or (stream_id,)


class Notification(msgspec.Struct, frozen=True):
    """One entry of a store's notification log."""

    id: int
    stream_id: str
    version: int
    event: Any


class Snapshot(msgspec.Struct, frozen=True):
    """A stream's state after its first ``version`` events, encoded by the stream's
    owner in ``format`` (a reader asks for the format it can read)."""

    stream_id: str
    version: int
    format: str
    state: bytes


class Latest(NamedTuple):
    """What ``load_latest`` found of a stream."""

    snapshot: Snapshot | None
    events: list[Any]           # after the snapshot's version; all of them without one


@runtime_checkable
class EventStore(Protocol):
    """The port. Implemented by ``PostgresEventStore`` and ``InMemoryEventStore``."""

    def append(self, batch: Batch, snapshots: Sequence[Snapshot] = ()) -> None:
        """Write all tuples of the batch in one transaction, or raise VersionConflict;
        ``snapshots`` are written in the same transaction, each replacing its
        stream's snapshot (unless that one is of a later version in the same format)."""
        ...

    async def append_async(self, batch: Batch, snapshots: Sequence[Snapshot] = ()) -> None:
        """``append`` awaited in the running event loop: the same transaction and
        refusals, and no blocking of the loop (nor a worker thread)."""
        ...

    def load_latest(self, stream_ids: Sequence[str], format: str | None) -> dict[str, Latest]:
        """For each stream (one read for all): its snapshot if it has one in
        ``format`` (None: none asked for), and its events after it (all without one)."""
        ...

    def load(self, stream_id: str, after_version: int = 0) -> list[Any]:
        """The stream's events with version > after_version, in order."""
        ...

    def read_notifications(self, start: int, limit: int) -> list[Notification]:
        """Up to ``limit`` notifications with id >= start, in id order."""
        ...

    def max_notification_id(self) -> int:
        """The highest notification id, 0 if the store is empty."""
        ...


def check_batch(batch: Batch) -> None:
    """Refuse a malformed batch before anything is written (both adapters)."""
    for stream_id, expected, events in batch:
        if not isinstance(stream_id, str) or not stream_id:
            raise ValueError(f"stream id must be a non-empty string: {stream_id!r}")
        if isinstance(expected, bool) or not isinstance(expected, int) or expected < 0:
            msg = f"expected version of {stream_id!r} must be an int >= 0: {expected!r}"
            raise ValueError(msg)
        if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
            raise TypeError(f"events of {stream_id!r} must be a list: {events!r}")


def check_snapshots(snapshots: Sequence[Snapshot]) -> None:
    """Refuse malformed snapshots before anything is written (both adapters)."""
    seen: set[str] = set()
    for snapshot in snapshots:
        if not isinstance(snapshot, Snapshot) or not snapshot.stream_id or snapshot.version < 1:
            raise ValueError(f"not a snapshot of a stream with events: {snapshot!r}")
        if snapshot.stream_id in seen:
            raise ValueError(f"two snapshots of stream {snapshot.stream_id!r} in one append")
        seen.add(snapshot.stream_id)


def conflicting(batch: Batch, exists: Callable[[str, int], bool]) -> list[str]:
    """Streams of the batch whose new versions are taken, by the store (``exists``)
    or by an earlier tuple of the same batch."""
    found: list[str] = []
    in_batch: dict[str, set[int]] = {}
    for stream_id, expected, events in batch:
        versions = range(expected + 1, expected + len(events) + 1)
        seen = in_batch.setdefault(stream_id, set())
        taken = any(v in seen or exists(stream_id, v) for v in versions)
        if taken and stream_id not in found:
            found.append(stream_id)
        seen.update(versions)
    return found
