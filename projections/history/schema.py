"""The players' histories in PostgreSQL (schema ``studroom_history``).

- ``hands``: one row per player and hand he was dealt into: the table, the hand's
  number and time, game and stakes, his seat, result (net, chips won, pots won, rake
  paid, showdown), his sitting (``session``: the stream version of his sit-down at that
  table) and the hand as he may see it (``record``: a msgspec-JSON HandRecord, never a
  card R23 keeps from him).
- ``positions``: per table store, the last notification projected (the tracking
  position, written in the same transaction as the rows).
- ``tables``: per store and table, what the next events need (projector.TableState).
"""

from __future__ import annotations

from typing import Any, Final

import psycopg
from psycopg import sql

HISTORY_SCHEMA: Final = "studroom_history"
_DDL_LOCK: Final = 0x4849_5354_4F52_59  # "HISTORY": several instances may create the tables at once

_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS {s}.hands (
        player text NOT NULL, table_id text NOT NULL, hand_no bigint NOT NULL,
        store text NOT NULL, version bigint NOT NULL, played_ms bigint,
        game text NOT NULL, small_bet bigint NOT NULL, big_bet bigint NOT NULL, ante bigint NOT NULL,
        seat integer NOT NULL, session bigint NOT NULL,
        start_stack bigint NOT NULL, end_stack bigint NOT NULL, net bigint NOT NULL, won bigint NOT NULL,
        pots_won integer NOT NULL, rake_paid bigint NOT NULL, showdown boolean NOT NULL,
        record bytea NOT NULL,
        PRIMARY KEY (player, table_id, hand_no))""",
    "CREATE INDEX IF NOT EXISTS hands_by_time ON {s}.hands (player, played_ms)",
    "CREATE TABLE IF NOT EXISTS {s}.positions (store text PRIMARY KEY, position bigint NOT NULL)",
    """CREATE TABLE IF NOT EXISTS {s}.tables (
        store text NOT NULL, table_id text NOT NULL, state bytea NOT NULL,
        PRIMARY KEY (store, table_id))""",
)

HAND_COLUMNS: Final = (
    ("player", "text"), ("table_id", "text"), ("hand_no", "int8"), ("store", "text"), ("version", "int8"),
    ("played_ms", "int8"), ("game", "text"), ("small_bet", "int8"), ("big_bet", "int8"), ("ante", "int8"),
    ("seat", "int4"), ("session", "int8"), ("start_stack", "int8"), ("end_stack", "int8"), ("net", "int8"),
    ("won", "int8"), ("pots_won", "int4"), ("rake_paid", "int8"), ("showdown", "bool"), ("record", "bytea"),
)
"""The columns of ``hands`` and their types, in the order the projector copies them."""


def create(conn: psycopg.Connection[Any], schema: str = HISTORY_SCHEMA) -> None:
    """Create the schema and its tables if missing (in one transaction)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        for statement in _TABLES:
            conn.execute(sql.SQL(statement).format(s=sql.Identifier(schema)))


def drop(conn: psycopg.Connection[Any], schema: str = HISTORY_SCHEMA) -> None:
    """Drop every history (a rebuild starts from zero)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
