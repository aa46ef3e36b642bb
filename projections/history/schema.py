"""The players' histories in PostgreSQL (schema ``studroom_history``).

- ``hands``: one row per player and hand he was dealt into: the table, the hand's
  number and time, game and stakes, his seat, result (net, chips won, pots won, rake
  paid, showdown), his sitting (``session``: the stream version of his sit-down at that
  table) and the hand as he may see it (``record``: a msgspec-JSON HandRecord, never a
  card R23 keeps from him).
- ``positions``: per table store, the last notification projected (the tracking
  position, written in the same transaction as the rows; tracking_schema.py).
- ``tables``: per store and table, what the next events need (rows.TableState).
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from ..tracking_schema import TrackedSchema

HISTORY_SCHEMA: Final = "studroom_history"

HAND_COLUMNS: Final = (
    ("player", "text"), ("table_id", "text"), ("hand_no", "int8"), ("store", "text"), ("version", "int8"),
    ("played_ms", "int8"), ("game", "text"), ("small_bet", "int8"), ("big_bet", "int8"), ("ante", "int8"),
    ("seat", "int4"), ("session", "int8"), ("start_stack", "int8"), ("end_stack", "int8"), ("net", "int8"),
    ("won", "int8"), ("pots_won", "int4"), ("rake_paid", "int8"), ("showdown", "bool"), ("record", "bytea"),
)
"""The columns of ``hands`` and their types, in the order the projector copies them."""

TABLES: Final = TrackedSchema(
    ddl_lock=0x4849_5354_4F52_59,  # "HISTORY"
    ddl=(
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
    ),
    rows_table="hands",
    columns=HAND_COLUMNS,
    states_table="tables",
    stream_column="table_id",
)


def create(conn: psycopg.Connection[Any], schema: str = HISTORY_SCHEMA) -> None:
    """Create the schema and its tables if missing (the answers may come before the projection)."""
    TABLES.create(conn, schema)


def drop(conn: psycopg.Connection[Any], schema: str = HISTORY_SCHEMA) -> None:
    """Drop every history (a rebuild starts from zero)."""
    TABLES.drop(conn, schema)
