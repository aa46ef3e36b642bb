"""The tables a tracking projector (tracking.py) keeps in a read model's schema.

A read model (the books, the histories) has a PostgreSQL schema of its own.  Beside its
own tables the projector keeps two, both written in the transaction of each batch:

- ``positions``: per store, the last notification folded (the tracking position);
- a table of states (the ledger's ``books``, the history's ``tables``): per store and
  stream, what the fold of the stream's next event depends on, as msgspec JSON.

The names of the states' table and of its stream column are the read models' own
(they were written so before this module gathered the DDL): existing data stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import psycopg
from psycopg import sql

_POSITIONS: Final = "CREATE TABLE IF NOT EXISTS {s}.positions (store text PRIMARY KEY, position bigint NOT NULL)"
_STATES: Final = """CREATE TABLE IF NOT EXISTS {s}.{states} (
    store text NOT NULL, {stream} text NOT NULL, state bytea NOT NULL,
    PRIMARY KEY (store, {stream}))"""


@dataclass(frozen=True)
class TrackedSchema:
    """A read model's tables: its own (``ddl``, ``{s}`` standing for the schema), the
    one its batches' rows are copied into (``rows_table``, columns and their types in
    copy order), and the tracking tables above (``states_table``, ``stream_column``)."""

    ddl_lock: int                               # an advisory lock: instances may create the tables at once
    ddl: tuple[str, ...]
    rows_table: str
    columns: tuple[tuple[str, str], ...]
    states_table: str
    stream_column: str

    def create(self, conn: psycopg.Connection[Any], schema: str) -> None:
        """Create the schema and its tables if missing (in one transaction)."""
        states = _STATES.format(s="{s}", states=self.states_table, stream=self.stream_column)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.ddl_lock,))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            for statement in (*self.ddl, _POSITIONS, states):
                conn.execute(sql.SQL(statement).format(s=sql.Identifier(schema)))

    def drop(self, conn: psycopg.Connection[Any], schema: str) -> None:
        """Drop the schema and all in it (a rebuild starts from zero)."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.ddl_lock,))
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def tracked(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Whether ``schema`` holds a tracking projector's positions (its read model exists)."""
    row = conn.execute("SELECT to_regclass(%s)", (f"{schema}.positions",)).fetchone()
    return row is not None and row[0] is not None


class Statements:
    """The SQL of one batch on a read model in ``schema``."""

    def __init__(self, tables: TrackedSchema, schema: str) -> None:
        s = sql.Identifier(schema)
        states, stream = sql.Identifier(tables.states_table), sql.Identifier(tables.stream_column)
        self.claim = sql.SQL("INSERT INTO {}.positions (store, position) VALUES (%s, 0) "
                             "ON CONFLICT (store) DO NOTHING").format(s)
        self.lock = sql.SQL("SELECT position FROM {}.positions WHERE store = %s FOR UPDATE").format(s)
        self.advance = sql.SQL("UPDATE {}.positions SET position = %s WHERE store = %s").format(s)
        self.load = sql.SQL("SELECT {stream}, state FROM {s}.{states} WHERE store = %s AND {stream} = ANY(%s)").format(
            s=s, states=states, stream=stream)
        self.save = sql.SQL("INSERT INTO {s}.{states} (store, {stream}, state) VALUES (%s, %s, %s) "
                            "ON CONFLICT (store, {stream}) DO UPDATE SET state = EXCLUDED.state").format(
            s=s, states=states, stream=stream)
        self.copy = sql.SQL("COPY {}.{} ({}) FROM STDIN (FORMAT BINARY)").format(
            s, sql.Identifier(tables.rows_table), sql.SQL(", ").join(sql.Identifier(name) for name, _ in tables.columns))
