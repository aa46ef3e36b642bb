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
        # the claim: the store's row made if missing, and locked (a second instance waits
        # on it, then reads the position the first committed: RETURNING gives the row as
        # updated, its latest version)
        self.claim = sql.SQL("INSERT INTO {}.positions AS p (store, position) VALUES (%s, 0) "
                             "ON CONFLICT (store) DO UPDATE SET position = p.position RETURNING position").format(s)
        self.positions = sql.SQL("SELECT store, position FROM {}.positions").format(s)
        self.save_and_advance = sql.SQL(   # the touched streams' states and the new position, one statement
            "WITH saved AS (INSERT INTO {s}.{states} AS old (store, {stream}, state) "
            "SELECT %(store)s::text, * FROM unnest(%(streams)s::text[], %(states)s::bytea[]) "
            "ON CONFLICT (store, {stream}) DO UPDATE SET state = EXCLUDED.state) "
            "UPDATE {s}.positions SET position = %(position)s WHERE store = %(store)s").format(
            s=s, states=states, stream=stream)
        self.load = sql.SQL("SELECT {stream}, state FROM {s}.{states} WHERE store = %s AND {stream} = ANY(%s)").format(
            s=s, states=states, stream=stream)
        self.copy = sql.SQL("COPY {}.{} ({}) FROM STDIN (FORMAT BINARY)").format(
            s, sql.Identifier(tables.rows_table), sql.SQL(", ").join(sql.Identifier(name) for name, _ in tables.columns))

    def render(self, conn: psycopg.Connection[Any]) -> Rendered:
        return Rendered(**{name: getattr(self, name).as_bytes(conn) for name in Rendered.__dataclass_fields__})


@dataclass(frozen=True)
class Rendered:
    """:class:`Statements` as bytes, rendered once: psycopg prepares a statement by its
    bytes, and rendering a composed statement at every execution cost more than running it."""

    claim: bytes
    positions: bytes
    save_and_advance: bytes
    load: bytes
    copy: bytes
