"""Where the seals of closed days are kept, and a day's books compared with its seal.

The seals live in a schema of their own, ``<ledger schema>_seals`` (``studroom_ledger_seals``),
and not in the books' schema: a rebuild drops the books and books everything again,
and the seals must outlive it (a rebuilt book is then proven against them).  Two tables:
``days`` (one row per closed day: the cut, the digest, the report as JSON) and
``events`` (per event of the day: its entries' digest, the stored event's digest).  A
row is inserted once; a trigger refuses any UPDATE or DELETE of either table, so a
seal changes only if someone drops the trigger first.
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from studroom.domain.account import player_of

from .seal import PLAYERS, RAKE, TOTALS, Seal, SealedEvent, day_range_ms
from .table_audit import Difference

CLOSED: Final = "closed day"

_DDL: Final = (
    "CREATE SCHEMA IF NOT EXISTS {s}",
    """CREATE TABLE IF NOT EXISTS {s}.days (
        day date PRIMARY KEY, closed_at_ms bigint NOT NULL, cut jsonb NOT NULL, digest text NOT NULL,
        entries bigint NOT NULL, report jsonb NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS {s}.events (
        day date NOT NULL REFERENCES {s}.days, store text NOT NULL, notification bigint NOT NULL,
        stream text NOT NULL, version bigint NOT NULL, entries_digest text NOT NULL, event_digest text NOT NULL,
        PRIMARY KEY (day, store, notification))""",
    """CREATE OR REPLACE FUNCTION {s}.sealed() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'a closed day''s seal is never changed'; END $$""",
    "CREATE OR REPLACE TRIGGER sealed BEFORE UPDATE OR DELETE OR TRUNCATE ON {s}.days "
    "FOR EACH STATEMENT EXECUTE FUNCTION {s}.sealed()",
    "CREATE OR REPLACE TRIGGER sealed BEFORE UPDATE OR DELETE OR TRUNCATE ON {s}.events "
    "FOR EACH STATEMENT EXECUTE FUNCTION {s}.sealed()",
)


def seals_schema(ledger_schema: str) -> str:
    return f"{ledger_schema}_seals"


def create(conn: psycopg.Connection[Any], ledger_schema: str) -> None:
    s = sql.Identifier(seals_schema(ledger_schema))
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (0x5345_414C,))      # "SEAL": one DDL at a time
        for statement in _DDL:
            conn.execute(sql.SQL(statement).format(s=s))


def store(conn: psycopg.Connection[Any], ledger_schema: str, seal: Seal, closed_at_ms: int) -> bool:
    """Insert the seal once: False if the day was closed already (nothing written)."""
    create(conn, ledger_schema)
    s = sql.Identifier(seals_schema(ledger_schema))
    with conn.transaction():
        inserted = conn.execute(sql.SQL(
            "INSERT INTO {}.days VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (day) DO NOTHING").format(s),
            (seal.day, closed_at_ms, Jsonb(seal.cut), seal.digest, seal.entries, Jsonb(seal.report()))).rowcount
        if not inserted:
            return False
        with conn.cursor().copy(sql.SQL("COPY {}.events FROM STDIN").format(s)) as copy:
            for e in seal.events:
                copy.write_row((seal.day, e.store, e.notification, e.stream, e.version, e.entries_digest,
                                e.event_digest))
    return True


def closed_days(conn: psycopg.Connection[Any], ledger_schema: str, first: datetime.date | None = None,
                last: datetime.date | None = None) -> list[datetime.date]:
    """The closed days between ``first`` and ``last`` (both included, either open)."""
    s = seals_schema(ledger_schema)
    if conn.execute("SELECT to_regclass(%s)", (f"{s}.days",)).fetchone()[0] is None:  # type: ignore[index]
        return []
    query = sql.SQL("SELECT day FROM {}.days WHERE (%s::date IS NULL OR day >= %s) AND (%s::date IS NULL OR "
                    "day <= %s) ORDER BY day").format(sql.Identifier(s))
    return [day for (day,) in conn.execute(query, (first, first, last, last)).fetchall()]


def load(conn: psycopg.Connection[Any], ledger_schema: str, day: datetime.date) -> Seal | None:
    s = sql.Identifier(seals_schema(ledger_schema))
    if day not in closed_days(conn, ledger_schema, day, day):
        return None
    cut, digest, entries, report = conn.execute(sql.SQL(
        "SELECT cut, digest, entries, report FROM {}.days WHERE day = %s").format(s), (day,)).fetchone()  # type: ignore[misc]
    seal = Seal(day, cut, digest, entries, *(_rows(report[name], columns) for name, columns in
                                             (("totals", TOTALS), ("rake", RAKE), ("players", PLAYERS))))
    seal.events = [SealedEvent(*row) for row in conn.execute(sql.SQL(
        "SELECT store, notification, stream, version, entries_digest, event_digest FROM {}.events "
        "WHERE day = %s ORDER BY store, notification").format(s), (day,)).fetchall()]
    return seal


def _rows(report: list[dict[str, Any]], columns: tuple[str, ...]) -> list[list[Any]]:
    """A report's rows back as lists (JSONB keeps no order of keys)."""
    return [[row[c] for c in columns] for row in report]


def compare(sealed: Seal, now: Seal) -> list[Difference]:
    """What changed in a closed day since its seal: each event's entries or stored
    event, an event gone or new to the day, then the figures."""
    out: list[Difference] = []
    before = {(e.store, e.notification): e for e in sealed.events}
    after = {(e.store, e.notification): e for e in now.events}
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key), after.get(key)
        if new is None:
            out.append(_changed(sealed, "the day's entries of this event are gone", old))  # type: ignore[union-attr]
        elif old is None:
            out.append(_changed(sealed, "entries new to the day since it was closed", new))
        else:
            if new.event_digest != old.event_digest:
                out.append(_changed(sealed, "the stored event changed since the day was closed", new))
            if new.entries_digest != old.entries_digest:
                out.append(_changed(sealed, "its entries in the books changed since the day was closed", new))
    if not out and now.digest != sealed.digest:
        out.append(_figures(sealed, f"the digest of the day's entries is {now.digest}, sealed {sealed.digest}"))
    for name, old_rows, new_rows in (("totals", sealed.totals, now.totals), ("rake", sealed.rake, now.rake),
                                     ("players' movements", sealed.players, now.players)):
        if json.dumps(old_rows) != json.dumps(new_rows):
            out.append(_figures(sealed, f"the day's {name} differ from the seal's"))
    return out


def _figures(seal: Seal, what: str) -> Difference:
    return Difference(CLOSED, f"{seal.day}: {what}", at_ms=day_range_ms(seal.day)[0])


def _changed(seal: Seal, what: str, event: SealedEvent) -> Difference:
    player = player_of(event.stream)
    return Difference(CLOSED, what, None if player else event.stream, None, player, event.where,
                      day_range_ms(seal.day)[0])
