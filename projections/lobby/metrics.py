"""The lobby's metrics: its lanes' counters, the queries answered, and its lag (public
messages its consumer has not had acknowledged)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from studroom.services.runtime.observability.metrics import (
    Collect,
    Metric,
    Poll,
    counter,
)
from studroom.services.store.lag import consumer_lag, projection_lag
from studroom.services.wire import subjects

from .jetstream import consumer_name

if TYPE_CHECKING:
    from .service import LobbyStats


def lobby_metrics(stats: LobbyStats) -> Collect:
    def collect() -> list[Metric]:
        s = stats.lanes
        return [
            counter("lobby_applied", "events applied to a table's entry", s.applied),
            counter("lobby_writes", "entries written to the bucket", s.writes),
            counter("lobby_conflicts", "writes another instance made first", s.conflicts),
            counter("lobby_resyncs", "entries rebuilt from the table's view", s.resyncs),
            counter("lobby_failed", "batches given back for redelivery", s.failed),
            counter("lobby_read_back", "events read back from the public stream after a gap", s.read_back),
            counter("lobby_rebuilt", "entries rebuilt from the public stream (missing or not the lobby's own)",
                    s.rebuilt),
            counter("lobby_foreign", "values found in the bucket that were not the lobby's own", s.foreign),
            counter("lobby_removed", "values not the lobby's own deleted: nothing to rebuild them from", s.removed),
            counter("lobby_queries", "lobby queries answered", stats.queries),
        ]

    return collect


def lobby_lag(observer: Any, instance_id: str) -> Poll:
    return projection_lag("lobby", lambda: consumer_lag(observer.nc, subjects.PUBLIC_STREAM, consumer_name(instance_id)))
