"""The event stores the books are built from: every table store and the cashier's.

A source is a PostgreSQL schema holding an event store (services/store): the table
stores ``studroom_p0``, ``studroom_p1``, ... (services/store/layout.py) and the
cashier's (``studroom_cashier``).  Each kind of store has its bookkeeping
(:class:`Bookkeeping`): the state kept per stream, the function from an event to its
entries, and the audit of a stream beside its books (reconcile.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from psycopg import sql
from studroom.domain.events import TableEvent
from studroom.services.store.layout import CASHIER_SCHEMA
from studroom.services.store.codec import register_event_types
from studroom.services.store.layout import STORE_SCHEMA_PREFIX, store_schemas
from studroom.services.store.postgres import PostgresEventStore

from .account_audit import AccountAudit
from .account_entries import CashierBook, account_entries
from .table_audit import TableAudit
from .entries import Entry, TableBook, table_entries


@dataclass(frozen=True)
class Bookkeeping:
    """How one kind of store is booked: a stream's state, an event's entries, and the
    audit of a stream beside its books (``audit(store, stream)``)."""

    book_type: type
    entries: Callable[[Any, str, Any], list[Entry]]
    audit: Callable[[str, str], TableAudit | AccountAudit]


TABLES: Final = Bookkeeping(TableBook, table_entries, TableAudit)
CASHIER: Final = Bookkeeping(CashierBook, account_entries, AccountAudit)


@dataclass(frozen=True)
class Source:
    schema: str
    bookkeeping: Bookkeeping

    @property
    def name(self) -> str:
        """The store's name in the books (its schema)."""
        return self.schema


def table_sources(conn: psycopg.Connection[Any], *, schemas: Sequence[str] | None = None,
                  stores: int | None = None, prefix: str = STORE_SCHEMA_PREFIX) -> list[Source]:
    """The table stores: ``schemas`` if given, else the first ``stores`` of the layout,
    else every ``<prefix><n>`` schema holding an event store."""
    if schemas:
        names = list(schemas)
    elif stores is not None:
        names = store_schemas(stores, prefix)
    else:
        names = discover(conn, prefix)
    return [Source(name, TABLES) for name in names]


def cashier_source(schema: str = CASHIER_SCHEMA) -> Source:
    return Source(schema, CASHIER)


def all_sources(conn: psycopg.Connection[Any], *, schemas: Sequence[str] | None = None, stores: int | None = None,
                cashier_schema: str | None = None) -> list[Source]:
    """The table stores (:func:`table_sources`), then the cashier's."""
    return [*table_sources(conn, schemas=schemas, stores=stores), cashier_source(cashier_schema or CASHIER_SCHEMA)]


def discover(conn: psycopg.Connection[Any], prefix: str = STORE_SCHEMA_PREFIX) -> list[str]:
    """The ``<prefix><n>`` schemas that hold an event store, in store order."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)")
    rows = conn.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = 'events'").fetchall()
    found = [(int(m.group(1)), schema) for (schema,) in rows if (m := pattern.fullmatch(schema))]
    return [schema for _, schema in sorted(found)]


def store_exists(conn: psycopg.Connection[Any], schema: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s)", (f"{schema}.events",)).fetchone()
    return row is not None and row[0] is not None


def streams_upto(conn: psycopg.Connection[Any], schema: str, position: int) -> list[str]:
    """The streams of a store with an event at or before notification ``position``."""
    statement = sql.SQL("SELECT DISTINCT originator_id FROM {}.events WHERE notification_id <= %s").format(
        sql.Identifier(schema))
    return sorted(stream for (stream,) in conn.execute(statement, (position,)).fetchall())


def stream_upto(conn: psycopg.Connection[Any], store: PostgresEventStore, stream: str,
                position: int) -> list[tuple[int, Any]]:
    """``(version, event)`` of a stream's events at or before notification ``position``,
    read from PostgreSQL, decoded by the store's own mapper."""
    statement = sql.SQL("SELECT originator_version, topic, state FROM {}.events WHERE originator_id = %s "
                        "AND notification_id <= %s ORDER BY originator_version").format(sql.Identifier(store.schema))
    decode = store.mapper.decode
    return [(version, decode(topic, bytes(state)))
            for version, topic, state in conn.execute(statement, (stream, position)).fetchall()]


def open_store(database_url: str, schema: str) -> PostgresEventStore:
    """A reader of an existing store (nothing is created)."""
    register_event_types(TableEvent)
    return PostgresEventStore(database_url, schema=schema, pool_size=1, max_overflow=1, create_table=False)
