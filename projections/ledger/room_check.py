"""The whole room reconciled (the console's desk) and its one chip check (``studroom
room``'s summary): the books brought up to a cut of the stores (cut.py), then reconciled
in full as of it (reconcile.py), read as a :class:`.conservation.ChipCheck`
(the tables' chips as the domain's replays count them, every difference a finding)."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from .conservation import ChipCheck
from .cut import book_to_cut
from .reconcile import Reconciliation, reconcile
from .schema import LEDGER_SCHEMA
from .sources import all_sources


def reconcile_room(database_url: str, store_schemas: Sequence[str] | None = None, *,
                   cashier_schema: str | None = None, ledger_schema: str = LEDGER_SCHEMA) -> Reconciliation:
    """The whole room reconciled as of a cut of its stores (``store_schemas``; None: every
    one found), the books brought up to it first (blocking)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        sources = all_sources(conn, schemas=store_schemas, cashier_schema=cashier_schema)
    cut, _ = book_to_cut(database_url, sources, ledger_schema=ledger_schema)
    return reconcile(database_url, sources, ledger_schema=ledger_schema, cut=cut)


def chip_check(database_url: str, store_schemas: Sequence[str], *, cashier_schema: str | None = None,
               ledger_schema: str = LEDGER_SCHEMA) -> ChipCheck:
    result = reconcile_room(database_url, store_schemas, cashier_schema=cashier_schema, ledger_schema=ledger_schema)
    chips = result.chips
    chips.bad = [f"{d.check}: {d.event or d.table or d.player or 'the room'}: {d.what}" for d in result.differences]
    return chips
