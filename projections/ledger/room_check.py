"""The room's one chip check (``studroom room``'s summary): the books brought up to
date, then reconciled in full (reconcile.py), read as a :class:`.conservation.ChipCheck`
(the tables' chips as the domain's replays count them, every difference a finding)."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from .conservation import ChipCheck
from .projector import Projector
from .reconcile import reconcile
from .schema import LEDGER_SCHEMA
from .sources import all_sources


def chip_check(database_url: str, store_schemas: Sequence[str], *, cashier_schema: str | None = None,
               ledger_schema: str = LEDGER_SCHEMA) -> ChipCheck:
    with psycopg.connect(database_url, autocommit=True) as conn:
        sources = all_sources(conn, schemas=store_schemas, cashier_schema=cashier_schema)
    projector = Projector(database_url, sources, ledger_schema=ledger_schema)
    try:
        projector.catch_up()
    finally:
        projector.close()
    result = reconcile(database_url, sources, ledger_schema=ledger_schema)
    chips = result.chips
    chips.bad = [f"{d.check}: {d.event or d.table or d.player or 'the room'}: {d.what}" for d in result.differences]
    return chips
