"""The dealer's record: tables' stored events, read straight from PostgreSQL.

The tools that answer disputes and export hands read the event stores, the source of
truth, and nothing else, on a running room or a stopped one (the database as
runtime/servers/attach.py finds it).
"""

from __future__ import annotations

from typing import Any

from studroom.domain.events import Event

from ..store.inspect import open_stores, stores_found
from ..store.layout import STORE_SCHEMA_PREFIX, store_schema


class NoSuchTable(LookupError):
    """No event store holds that table."""


def _stores(database_url: str, prefix: str) -> list[Any]:
    schemas = [store_schema(i, prefix) for i in stores_found(database_url, prefix)]
    return open_stores(database_url, schemas, create=False)


def table_stream(database_url: str, table_id: str, prefix: str = STORE_SCHEMA_PREFIX) -> list[Event]:
    """Every stored event of one table, in order (NoSuchTable if no store holds it)."""
    stores = _stores(database_url, prefix)
    try:
        for store in stores:
            events = store.load(table_id)
            if events:
                return events
    finally:
        for store in stores:
            store.close()
    raise NoSuchTable(f"no event store holds a table {table_id!r}")
