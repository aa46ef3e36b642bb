"""Verified-through marks: how far each table's record has been verified, so that a
daily ``studroom verify`` checks only the hands stored since (``--all``: every hand
again).

A mark is kept per table in a schema of its own (``studroom_verified``; the event
stores are never written): the version the table was verified through (the end of
its last checked hand, every hand up to it consistent) and the SHA-256 of the
events up to it, as msgspec encodes them.  A run reads the whole stream still (the
table is replayed up to the mark), hashes the prefix again and checks the table from
its first event when the prefix changed since: an event before the mark that is
altered is found by the next run too.  What a mark trusts is its own row: whoever
rewrites both an event and the mark's digest is found by ``--all`` only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec
import psycopg
from studroom.domain.events import Event

SCHEMA = "studroom_verified"

_CREATE = (f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
           f"CREATE TABLE IF NOT EXISTS {SCHEMA}.marks (table_id text PRIMARY KEY, version bigint NOT NULL, "
           "digest bytea NOT NULL, verified_at timestamptz NOT NULL DEFAULT now())")


class Mark(msgspec.Struct, frozen=True):
    """A table verified through event ``version`` (its events ``[0, version)``)."""

    version: int
    digest: bytes


def digest(events: Sequence[Event]) -> bytes:
    """The SHA-256 of ``events`` as msgspec encodes them (one call for the prefix)."""
    return hashlib.sha256(msgspec.json.encode(events)).digest()


def read_marks(conn: psycopg.Connection[Any]) -> dict[str, Mark]:
    """Every table's mark (none before the first run that saves one)."""
    found = conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.marks",)).fetchone()
    if found is None or found[0] is None:
        return {}
    rows = conn.execute(f"SELECT table_id, version, digest FROM {SCHEMA}.marks").fetchall()
    return {table_id: Mark(version, bytes(value)) for table_id, version, value in rows}


def save_marks(conn: psycopg.Connection[Any], marks: dict[str, Mark]) -> None:
    """Move the tables' marks to ``marks`` (made the first time)."""
    if not marks:
        return
    with conn.transaction():
        for statement in _CREATE:
            conn.execute(statement)
        with conn.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {SCHEMA}.marks (table_id, version, digest) VALUES (%s, %s, %s) ON CONFLICT (table_id) "
                "DO UPDATE SET version = excluded.version, digest = excluded.digest, verified_at = now()",
                [(table_id, mark.version, mark.digest) for table_id, mark in marks.items()])
