"""How far a reader is behind its source, in events: a projection that keeps its
positions in a table (the ledger, the histories) or a JetStream consumer (the lobby,
the cashier's cash-outs).  Read by the metrics' polls (metrics.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from ..runtime.observability.metrics import Poll


def positions_lag(database_url: str, schema: str) -> dict[str, float]:
    """For each store in ``<schema>.positions``: its last notification id past the position
    (on this process's kept connection to the server: ``inspect.kept_connection``)."""
    from psycopg import sql

    from .inspect import kept_connection, last_notification_ids

    conn = kept_connection(database_url)
    rows = conn.execute(sql.SQL("SELECT store, position FROM {}.positions").format(sql.Identifier(schema)))
    positions = dict(rows.fetchall())
    tops = last_notification_ids(conn, positions)
    return {store: max(0, tops[store] - position) for store, position in positions.items()}


async def consumer_lag(nc: Any, stream: str, consumer: str) -> float:
    """Messages of ``stream`` the durable ``consumer`` has not had acknowledged."""
    if nc is None or not nc.is_connected:
        raise ConnectionError("not connected")
    info = await nc.jetstream().consumer_info(stream, consumer, timeout=2)
    return float(info.num_pending + info.num_ack_pending)


def projection_lag(projection: str, read: Any) -> Poll:
    """The gauge ``projection_lag_events{projection=...}`` of one reader: ``read()``
    is a coroutine giving its lag (the sum over its sources)."""
    async def total() -> dict[str, float]:
        return {projection: await read()}

    return Poll("projection_lag_events", "events the projection has not processed yet", "projection", total)


def positions_poll(projection: str, database_url: str, schema: str) -> Poll:
    async def read() -> float:
        return sum((await asyncio.to_thread(positions_lag, database_url, schema)).values())

    return projection_lag(projection, read)
