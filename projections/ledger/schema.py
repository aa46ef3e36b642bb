"""The books' tables in PostgreSQL (schema ``studroom_ledger``).

- ``entries``: one row per entry, keyed by where it came from: the store (its schema),
  the notification id and the entry's place among its event's entries; the stream and
  version name the event too.
- ``positions``: per store, the last notification booked (the projection's tracking
  position, written in the same transaction as the entries; tracking_schema.py).
- ``books``: per store and stream, what the next event's entries depend on
  (:class:`.entries.TableBook`), also written in that transaction.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from ..tracking_schema import TrackedSchema, tracked

LEDGER_SCHEMA: Final = "studroom_ledger"

TABLES: Final = TrackedSchema(
    ddl_lock=0x4C45_4447_4552,  # "LEDGER"
    ddl=(
        """CREATE TABLE IF NOT EXISTS {s}.entries (
            store text NOT NULL, notification bigint NOT NULL, seq integer NOT NULL,
            stream text NOT NULL, version bigint NOT NULL,
            kind text NOT NULL, debit text NOT NULL, credit text NOT NULL, amount bigint NOT NULL,
            table_id text, hand_no bigint, player text, at_ms bigint,
            PRIMARY KEY (store, notification, seq))""",
        "CREATE INDEX IF NOT EXISTS entries_hand ON {s}.entries (table_id, hand_no)",
        "CREATE INDEX IF NOT EXISTS entries_player ON {s}.entries (player)",
    ),
    rows_table="entries",
    columns=(("store", "text"), ("notification", "int8"), ("seq", "int4"), ("stream", "text"), ("version", "int8"),
             ("kind", "text"), ("debit", "text"), ("credit", "text"), ("amount", "int8"), ("table_id", "text"),
             ("hand_no", "int8"), ("player", "text"), ("at_ms", "int8")),
    states_table="books",
    stream_column="stream",
)


def drop(conn: psycopg.Connection[Any], schema: str = LEDGER_SCHEMA) -> None:
    """Drop the books entirely (a rebuild starts from zero)."""
    TABLES.drop(conn, schema)


def exists(conn: psycopg.Connection[Any], schema: str = LEDGER_SCHEMA) -> bool:
    return tracked(conn, schema)
