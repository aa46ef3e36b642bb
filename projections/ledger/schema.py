"""The books' tables in PostgreSQL (schema ``studroom_ledger``).

- ``entries``: one row per entry, keyed by where it came from: the store (its schema),
  the notification id and the entry's place among its event's entries; the stream and
  version name the event too.
- ``positions``: per store, the last notification booked (the projection's tracking
  position, written in the same transaction as the entries).
- ``books``: per store and stream, what the next event's entries depend on
  (:class:`.entries.TableBook`), also written in that transaction.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg
from psycopg import sql

LEDGER_SCHEMA: Final = "studroom_ledger"
_DDL_LOCK: Final = 0x4C45_4447_4552  # "LEDGER": several instances may create the tables at once

_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS {s}.entries (
        store text NOT NULL, notification bigint NOT NULL, seq integer NOT NULL,
        stream text NOT NULL, version bigint NOT NULL,
        kind text NOT NULL, debit text NOT NULL, credit text NOT NULL, amount bigint NOT NULL,
        table_id text, hand_no bigint, player text, at_ms bigint,
        PRIMARY KEY (store, notification, seq))""",
    "CREATE INDEX IF NOT EXISTS entries_hand ON {s}.entries (table_id, hand_no)",
    "CREATE INDEX IF NOT EXISTS entries_player ON {s}.entries (player)",
    "CREATE TABLE IF NOT EXISTS {s}.positions (store text PRIMARY KEY, position bigint NOT NULL)",
    """CREATE TABLE IF NOT EXISTS {s}.books (
        store text NOT NULL, stream text NOT NULL, state bytea NOT NULL,
        PRIMARY KEY (store, stream))""",
)

COLUMNS: Final = ("store", "notification", "seq", "stream", "version", "kind", "debit", "credit",
                  "amount", "table_id", "hand_no", "player", "at_ms")


def create(conn: psycopg.Connection[Any], schema: str = LEDGER_SCHEMA) -> None:
    """Create the books' schema and tables if missing (in one transaction)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        for statement in _TABLES:
            conn.execute(sql.SQL(statement).format(s=sql.Identifier(schema)))


def drop(conn: psycopg.Connection[Any], schema: str = LEDGER_SCHEMA) -> None:
    """Drop the books entirely (a rebuild starts from zero)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def exists(conn: psycopg.Connection[Any], schema: str = LEDGER_SCHEMA) -> bool:
    row = conn.execute("SELECT to_regclass(%s)", (f"{schema}.positions",)).fetchone()
    return row is not None and row[0] is not None
