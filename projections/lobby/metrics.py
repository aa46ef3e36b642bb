"""The lobby's metrics: its lanes' counters, the queries answered, and its lag (public
messages its consumer has not had acknowledged)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from studroom.services.runtime.lag import consumer_lag, projection_lag
from studroom.services.runtime.metrics import Collect, Metric, Poll, counter
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
            counter("lobby_queries", "lobby queries answered", stats.queries),
        ]

    return collect


def lobby_lag(observer: Any, instance_id: str) -> Poll:
    return projection_lag("lobby", lambda: consumer_lag(observer.nc, subjects.PUBLIC_STREAM, consumer_name(instance_id)))
