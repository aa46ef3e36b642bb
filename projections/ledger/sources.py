"""The event stores the books are built from: every table store and the cashier's.

A source is a PostgreSQL schema holding an event store (services/store): the table
stores ``studroom_p0``, ``studroom_p1``, ... (services/store/layout.py) and the
cashier's (``studroom_cashier``).  Each kind of store has its bookkeeping
(:class:`Bookkeeping`): the state kept per stream, the function from an event to its
entries, and the audit of a stream beside its books (reconcile.py).  Finding and
reading the stores is the store side's (services/store/inspect.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from studroom.services.store.inspect import stores_on
from studroom.services.store.layout import (
    CASHIER_SCHEMA,
    STORE_SCHEMA_PREFIX,
    store_schema,
    store_schemas,
)

from .account_audit import AccountAudit
from .account_entries import CashierBook, account_entries
from .entries import Entry, TableBook, table_entries
from .table_audit import TableAudit


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
        names = [store_schema(index, prefix) for index in stores_on(conn, prefix)]
    return [Source(name, TABLES) for name in names]


def cashier_source(schema: str = CASHIER_SCHEMA) -> Source:
    return Source(schema, CASHIER)


def all_sources(conn: psycopg.Connection[Any], *, schemas: Sequence[str] | None = None, stores: int | None = None,
                cashier_schema: str | None = None) -> list[Source]:
    """The table stores (:func:`table_sources`), then the cashier's."""
    return [*table_sources(conn, schemas=schemas, stores=stores), cashier_source(cashier_schema or CASHIER_SCHEMA)]
