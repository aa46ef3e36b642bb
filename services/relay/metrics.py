"""The relay's metrics: what each store's relay published, and its backlog (events
stored but not yet published: the store's last notification id past the last one acked)."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from typing import TYPE_CHECKING

from ..runtime.observability.metrics import Collect, Metric, Poll, by_label

if TYPE_CHECKING:
    from .relay import Relay
    from .store_relay import StoreRelay

_HELP = {
    "events": "notifications relayed (their messages acked)",
    "messages": "messages published and acked",
    "duplicates": "publications the stream had already (its dedupe window)",
    "skipped": "messages a recovery found already stored",
    "dead_letters": "messages set aside",
    "recoveries": "recoveries after a restart or an outage",
    "batches": "batches relayed",
    "records": "position records written",
    "reads": "reads of the store's notification log",
}


def relay_metrics(relay: Relay) -> Collect:
    def collect() -> list[Metric]:
        per_store = {s.name: asdict(s.stats) for s in relay.stores}
        return [by_label("counter", f"relay_{key}", help_, "store",
                         {name: stats[key] for name, stats in per_store.items()})
                for key, help_ in _HELP.items()]

    return collect


def relay_backlog(relay: Relay) -> Poll:
    """A store is asked for its end only when the relay does not know it (an idle
    relay that heard no commit since its last read knows it: no query, issue 20)."""
    async def end_of(store: StoreRelay) -> int:
        end = store.known_end()
        return end if end is not None else await asyncio.to_thread(store.store.max_notification_id)

    async def read() -> dict[str, float]:
        tops = await asyncio.gather(*(end_of(s) for s in relay.stores))
        return {s.name: max(0, top - s.acked) for s, top in zip(relay.stores, tops, strict=True)}

    return Poll("relay_backlog_events", "events stored but not yet published, by store", "store", read)
