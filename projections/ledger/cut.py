"""The cut: the one moment of the room the books are read and proven at.

A running room writes to several stores at once: a buy-in is reserved in the
cashier's store, credited in a table's, confirmed in the cashier's again; the ledger
service books each store in batches of its own.  Read store after store, or as far as
each store's books happen to be, the two sides of a transfer (or a hand and its
entries) are seen at different moments and seem not to agree.

A cut is each store's last notification id, all read in ONE snapshot of the database
(a ``REPEATABLE READ`` transaction): exactly the appends committed before that moment,
in every store (stores on several servers: a moment all held still at, see
:func:`_one_moment`).  It is stable: a store appends under its table lock, so its
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

import logging
import time
from collections.abc import Sequence
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from studroom.services.store.inspect import last_notification_ids, servers_of, store_exists

from ..tracking import Progress
from .projector import Projector
from .schema import LEDGER_SCHEMA
from .sources import Source

log = logging.getLogger(__name__)
MOMENT_WITHIN: Final = 5.0     # seconds to find a moment all servers' stores stood still at

Cut = dict[str, int]
"""Each store's (schema's) last notification id in the cut; 0: nothing of it."""


def take_cut(database_url: str, sources: Sequence[Source]) -> Cut:
    """Every store's last notification id, read in one snapshot; stores on several
    servers: in one moment (:func:`_one_moment`)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        servers = servers_of(conn, [s.schema for s in sources])
        if list(servers) == [""]:
            cut = _snapshot(conn, servers[""])
        else:
            cut = _one_moment(database_url, servers)
    return {s.name: cut.get(s.name, 0) for s in sources}


def _snapshot(conn: psycopg.Connection[Any], schemas: Sequence[str]) -> Cut:
    """The last notification ids of the stores of one server, in one snapshot of it."""
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        with conn.transaction():
            found = [schema for schema in schemas if store_exists(conn, schema)]
            return last_notification_ids(conn, found)
    finally:
        conn.isolation_level = None


def _one_moment(database_url: str, servers: dict[str, list[str]]) -> Cut:
    """Stores on several servers have no common snapshot: each server's is read in
    turn (a collect), again and again until two collects in a row are equal.  Then
    every server held those ids from its first read to its second, which spans the
    other servers' reads: all held them at one moment, a consistent cut.  A room too
    busy for that within :data:`MOMENT_WITHIN` gets the last collect (logged): a
    transfer between two servers may then show half booked."""
    conns = {url: psycopg.connect(url or database_url, autocommit=True) for url in servers}
    try:
        def collect() -> Cut:
            return {k: v for url, conn in conns.items() for k, v in _snapshot(conn, servers[url]).items()}
        last, deadline = collect(), time.monotonic() + MOMENT_WITHIN
        while (now := collect()) != last and time.monotonic() < deadline:
            last = now
        if now != last:
            log.warning("no moment found within %.0f s when the %d servers' stores stood still: "
                        "the cut is the last look at each", MOMENT_WITHIN, len(servers))
        return now
    finally:
        for conn in conns.values():
            conn.close()


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
