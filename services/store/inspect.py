"""Reading whole event stores: which there are, every table in them, how many events,
whether the layout fits, a stream as far as a reader has read the store.

For the room's summary, the projections (their stores found, reconciliation), the chip
check and tests; the services read one table at a time through the
:class:`.port.EventStore` port.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import sql
from studroom.domain.events import Event, TableEvent

from .codec import register_event_types
from .layout import STORE_SCHEMA_PREFIX, store_of_table, store_schema
from .postgres import DEFAULT_TABLE, PostgresEventStore
from .servers import Placement, url_of_server

_kept_lock = threading.Lock()
_kept: dict[str, psycopg.Connection[Any]] = {}       # URL -> this process's connection to that server


def kept_connection(url: str) -> psycopg.Connection[Any]:
    """This process's connection to the server at ``url`` (autocommit), kept between
    calls and made again when it closed or broke: a new connection costs ~16 ms of CPU,
    half in PostgreSQL (a poll every 2 s: 0.8 % of a core)."""
    with _kept_lock:
        conn = _kept.get(url)
        if conn is None or conn.closed or conn.broken:
            conn = _kept[url] = psycopg.connect(url, autocommit=True, connect_timeout=5)
        return conn


def store_url(database_url: str, schema: str) -> str:
    """The URL of the server that holds the store ``schema`` of the room whose home
    server is ``database_url`` (:mod:`.servers`)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        where = Placement.of(conn).get(schema)
    return database_url if where is None else url_of_server(*where)


def on_server(conn: psycopg.Connection[Any], schema: str) -> psycopg.Connection[Any]:
    """``conn`` (a connection to the home server) when the store ``schema`` lives there,
    else this process's connection to the server that holds it (autocommit; kept)."""
    where = Placement.of(conn).get(schema)
    return conn if where is None else kept_connection(url_of_server(*where))


def servers_of(conn: psycopg.Connection[Any], schemas: Iterable[str]) -> dict[str, list[str]]:
    """The stores ``schemas`` grouped by the server that holds them (its URL; "" for home)."""
    grouped: dict[str, list[str]] = {}
    placed = Placement.of(conn)
    for schema in schemas:
        where = placed.get(schema)
        grouped.setdefault("" if where is None else url_of_server(*where), []).append(schema)
    return grouped


def stores_found(database_url: str, prefix: str = STORE_SCHEMA_PREFIX) -> list[int]:
    """The indexes of the event stores the database holds (schemas ``<prefix><n>``)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        return stores_on(conn, prefix)


def stores_on(conn: psycopg.Connection[Any], prefix: str = STORE_SCHEMA_PREFIX) -> list[int]:
    """:func:`stores_found`, on an open connection: the one look for stores."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)")
    rows = conn.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = %s",
                        (DEFAULT_TABLE,)).fetchall()
    here = {int(m.group(1)) for (schema,) in rows if (m := pattern.fullmatch(schema))}
    elsewhere = {int(m.group(1)) for schema in Placement.of(conn)
                 if (m := pattern.fullmatch(schema)) and store_exists(conn, schema)}
    return sorted(here | elsewhere)


def store_exists(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Whether ``schema`` holds an event store (a reader waits until it does)."""
    row = on_server(conn, schema).execute("SELECT to_regclass(%s)", (f"{schema}.{DEFAULT_TABLE}",)).fetchone()
    return row is not None and row[0] is not None


def store_layout_problem(database_url: str, stores: int, prefix: str = STORE_SCHEMA_PREFIX) -> str | None:
    """Tables stored under another number of stores would be looked for in the wrong
    store (and opened anew there): say so, or None when the layout fits."""
    found = stores_found(database_url, prefix)
    misplaced = []
    for index in found:
        for store in open_stores(database_url, [store_schema(index, prefix)], create=False):
            try:
                misplaced += [t for t in stream_ids(store) if store_of_table(t, stores) != index]
            finally:
                store.close()
    if not misplaced:
        return None
    return (f"{len(misplaced)} stored tables (e.g. {misplaced[0]}) live in other event stores "
            f"than --stores {stores} puts them; start with the number of stores they were "
            f"written with (store schemas found: {', '.join(store_schema(i, prefix) for i in found)})")


def open_stores(database_url: str, schemas: Sequence[str], *, create: bool = True) -> list[Any]:
    """The stores in ``schemas`` (made if missing, unless ``create`` is False: readers
    of existing stores change nothing, not even the append function)."""
    register_event_types(TableEvent)
    return [PostgresEventStore(store_url(database_url, s), schema=s, pool_size=2, max_overflow=2, create_table=create)
            for s in schemas]


def open_reader(database_url: str, schema: str) -> PostgresEventStore:
    """A reader of one existing store, on a connection or two (nothing is created)."""
    register_event_types(TableEvent)
    return PostgresEventStore(store_url(database_url, schema), schema=schema, pool_size=1, max_overflow=1, create_table=False)


def stream_ids(store: Any) -> list[str]:
    """Every stream (table) of a PostgreSQL event store."""
    statement = sql.SQL("SELECT DISTINCT originator_id FROM {}.{}").format(
        sql.Identifier(store.schema), sql.Identifier(store.table))
    with store.datastore.get_connection() as conn:
        return sorted(row["originator_id"] for row in conn.execute(statement).fetchall())


def load_tables(database_url: str, schemas: Sequence[str],
                only: Iterable[str] | None = None) -> dict[str, list[Event]]:
    """Every table's stored events (or those of the tables ``only``), from all stores."""
    found: dict[str, list[Event]] = {}
    wanted = None if only is None else set(only)
    stores = open_stores(database_url, schemas)
    try:
        for store in stores:
            for stream in stream_ids(store):
                if wanted is None or stream in wanted:
                    found.setdefault(stream, []).extend(store.load(stream))
    finally:
        for store in stores:
            store.close()
    return found


def last_notification_ids(conn: psycopg.Connection[Any], schemas: Iterable[str]) -> dict[str, int]:
    """Each store's highest notification id (0 while empty), read on ``conn``
    without opening the stores (the readers' lag, the fault drill's marks)."""
    statement = "SELECT coalesce(max(notification_id), 0) FROM {}.{}"
    return {schema: on_server(conn, schema).execute(sql.SQL(statement).format(sql.Identifier(schema), sql.Identifier(DEFAULT_TABLE)))
            .fetchone()[0] for schema in schemas}  # type: ignore[index]


def streams_upto(conn: psycopg.Connection[Any], schema: str, position: int) -> list[str]:
    """The streams of a store with an event at or before notification ``position``."""
    statement = sql.SQL("SELECT DISTINCT originator_id FROM {}.{} WHERE notification_id <= %s").format(
        sql.Identifier(schema), sql.Identifier(DEFAULT_TABLE))
    return sorted(stream for (stream,) in on_server(conn, schema).execute(statement, (position,)).fetchall())


def stream_upto(conn: psycopg.Connection[Any], store: PostgresEventStore, stream: str,
                position: int) -> list[tuple[int, Any]]:
    """``(version, event)`` of a stream's events at or before notification ``position``
    (what a projection at that position has read of it), read on ``conn``, decoded by
    the store's own mapper.  The port reads a stream by version only."""
    statement = sql.SQL("SELECT originator_version, topic, state FROM {}.{} WHERE originator_id = %s "
                        "AND notification_id <= %s ORDER BY originator_version").format(
        sql.Identifier(store.schema), sql.Identifier(store.table))
    decode = store.mapper.decode
    return [(version, decode(topic, bytes(state)))
            for version, topic, state in on_server(conn, store.schema).execute(statement, (stream, position)).fetchall()]


def events_stored(database_url: str, schemas: Sequence[str]) -> int:
    stores = open_stores(database_url, schemas)
    try:
        return sum(store.max_notification_id() for store in stores)
    finally:
        for store in stores:
            store.close()


def stream_lengths(conn: psycopg.Connection[Any], schema: str) -> dict[str, int]:
    """Each stream of a store and its last version (how many events it holds), on ``conn``."""
    statement = sql.SQL("SELECT originator_id, max(originator_version) FROM {}.{} GROUP BY originator_id").format(
        sql.Identifier(schema), sql.Identifier(DEFAULT_TABLE))
    return dict(on_server(conn, schema).execute(statement).fetchall())


def stream_json(conn: psycopg.Connection[Any], schema: str, stream: str) -> bytes:
    """A stream's stored events as one JSON array in version order (``[e1,e2,...]``):
    one query, its rows joined by the server and sent in binary, so that the whole
    stream decodes in one call (msgspec, by the events' type tags) instead of row by
    row through eventsourcing's dict rows."""
    statement = sql.SQL("SELECT '['::bytea || coalesce(string_agg(state, ','::bytea ORDER BY originator_version), "
                        "''::bytea) || ']'::bytea FROM {}.{} WHERE originator_id = %s").format(
        sql.Identifier(schema), sql.Identifier(DEFAULT_TABLE))
    row = on_server(conn, schema).execute(statement, (stream,), binary=True).fetchone()
    return bytes(row[0])  # type: ignore[index]
