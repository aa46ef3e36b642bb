"""The event store in a dict: the same semantics as PostgreSQL, for fast tests."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Self

from .codec import MsgspecMapper
from .port import (
    Batch,
    Latest,
    Notification,
    Snapshot,
    VersionConflict,
    check_batch,
    check_snapshots,
    conflicting,
)


class InMemoryEventStore:
    """The port's semantics in a dict (events are encoded and decoded as in the
    database, so encoding problems show up in fast tests too). Thread-safe."""

    def __init__(self, mapper: MsgspecMapper | None = None, name: str = "memory") -> None:
        self.name = name
        self.mapper = mapper or MsgspecMapper()
        self._streams: dict[str, dict[int, int]] = {}  # stream -> version -> log index
        self._log: list[tuple[str, int, str, bytes]] = []
        self._snapshots: dict[str, Snapshot] = {}
        self._lock = threading.Lock()

    def append(self, batch: Batch, snapshots: Sequence[Snapshot] = ()) -> None:
        check_batch(batch)
        check_snapshots(snapshots)
        encoded = [
            (stream_id, version, *self.mapper.encode(event))
            for stream_id, expected, events in batch
            for version, event in enumerate(events, start=expected + 1)
        ]
        with self._lock:
            streams = self._streams
            conflicts = conflicting(batch, lambda s, v: v in streams.get(s, ()))
            if conflicts:
                raise VersionConflict(conflicts[0], conflicts)
            for stream_id, version, topic, state in encoded:
                self._log.append((stream_id, version, topic, state))
                self._streams.setdefault(stream_id, {})[version] = len(self._log)
            for snapshot in snapshots:
                old = self._snapshots.get(snapshot.stream_id)
                if old is None or old.format != snapshot.format or old.version < snapshot.version:
                    self._snapshots[snapshot.stream_id] = snapshot

    async def append_async(self, batch: Batch, snapshots: Sequence[Snapshot] = ()) -> None:
        self.append(batch, snapshots)       # a dict never waits

    def load_latest(self, stream_ids: Sequence[str], format: str | None) -> dict[str, Latest]:
        found = {}
        for stream_id in dict.fromkeys(stream_ids):
            with self._lock:
                snapshot = self._snapshots.get(stream_id)
            if snapshot is None or snapshot.format != format:
                snapshot = None
            found[stream_id] = Latest(snapshot, self.load(stream_id, snapshot.version if snapshot else 0))
        return found

    def load(self, stream_id: str, after_version: int = 0) -> list[Any]:
        with self._lock:
            stream = self._streams.get(stream_id, {})
            rows = [self._log[stream[v] - 1] for v in sorted(stream) if v > after_version]
        return [self.mapper.decode(topic, state) for _, _, topic, state in rows]

    def read_notifications(self, start: int, limit: int) -> list[Notification]:
        first = max(start, 1)
        with self._lock:
            rows = self._log[first - 1 : first - 1 + max(limit, 0)]
        return [
            Notification(id=i, stream_id=s, version=v, event=self.mapper.decode(t, d))
            for i, (s, v, t, d) in enumerate(rows, start=first)
        ]

    def max_notification_id(self) -> int:
        with self._lock:
            return len(self._log)

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
