"""The cut: the one moment of the room the books are read and proven at.

A running room writes to several stores at once: a buy-in is reserved in the
cashier's store, credited in a table's, confirmed in the cashier's again; the ledger
service books each store in batches of its own.  Read store after store, or as far as
each store's books happen to be, the two sides of a transfer (or a hand and its
entries) are seen at different moments and seem not to agree.

A cut is each store's last notification id, all read in ONE snapshot of the database
(a ``REPEATABLE READ`` transaction): exactly the appends committed before that moment,
in every store.  It is stable: a store appends under its table lock, so its
notification ids are committed in order and no event at or below the cut can appear
later.  A command's events are one append, so a cut never splits them (a hand's awards
and its ``HandEnded`` are on the same side).  Causes come before their effects across
the stores (the cashier reserves before the table credits, the table credits before
the cashier confirms; a player leaves before the cashier credits him), so a cut holds
every transfer whole, or half done: its chips are then "in transit".

The books are brought at least to the cut (:func:`book_to_cut`) and read as of it:
the entries of notifications at or below each store's cut (:func:`upto`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from studroom.services.store.inspect import last_notification_ids, store_exists

from ..tracking import Progress
from .projector import Projector
from .schema import LEDGER_SCHEMA
from .sources import Source

Cut = dict[str, int]
"""Each store's (schema's) last notification id in the cut; 0: nothing of it."""


def take_cut(database_url: str, sources: Sequence[Source]) -> Cut:
    """Every store's last notification id, read in one snapshot."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with conn.transaction():
            found = [s.name for s in sources if store_exists(conn, s.schema)]
            cut = last_notification_ids(conn, found)
    return {s.name: cut.get(s.name, 0) for s in sources}


def book_to_cut(database_url: str, sources: Sequence[Source], *, ledger_schema: str = LEDGER_SCHEMA,
                on_progress: Progress | None = None) -> tuple[Cut, int]:
    """Take a cut and book every store at least up to it (safe beside running ledger
    services): the cut, and how many events this booked (``on_progress`` follows it)."""
    cut = take_cut(database_url, sources)
    projector = Projector(database_url, sources, ledger_schema=ledger_schema)
    try:
        booked = projector.catch_up(on_progress)
    finally:
        projector.close()
    return cut, booked


def books_cut(conn: psycopg.Connection[Any], ledger_schema: str = LEDGER_SCHEMA) -> Cut:
    """Each store's position in the books, read in one statement: the cut of a room at
    rest (the books are where the stores end) or of books nobody brought further."""
    query = sql.SQL("SELECT store, position FROM {}.positions").format(sql.Identifier(ledger_schema))
    return {store: int(position) for store, position in conn.execute(query).fetchall()}


def upto(cut: Cut) -> tuple[sql.Composable, tuple[Any, ...]]:
    """A condition on the books' entries (and its parameters): as of ``cut``."""
    return sql.SQL("notification <= coalesce((%s::jsonb ->> store)::bigint, 0)"), (Jsonb(cut),)
