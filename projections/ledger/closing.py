"""Closing a day (``studroom ledger close DAY``) and proving a closed day again.

A day is closed once it is over (UTC): its seal (seal.py) is taken from the books as
of a cut and stored once (seal_store.py).  Closing a closed day again stores nothing:
it takes the seal anew and compares.  ``studroom ledger reconcile --from/--to`` does
the same for every closed day of its period, after the usual reconciliation.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import psycopg

from . import seal_store
from .cut import Cut
from .seal import Seal, day_range_ms, seal_day
from .sources import Source
from .table_audit import Difference


class DayNotOver(ValueError):
    """A day is closed only once it is over."""


def close_day(conn: psycopg.Connection[Any], database_url: str, sources: Sequence[Source], ledger_schema: str,
              day: datetime.date, cut: Cut, now_ms: int) -> tuple[Seal, list[Difference] | None]:
    """Seal ``day``: (the seal, None) when this closed it; (its stored seal, what
    changed since) when it was closed before."""
    if day_range_ms(day)[1] > now_ms:
        raise DayNotOver(f"{day} is not over yet (UTC): a day is closed once it is")
    seal = seal_day(conn, database_url, sources, ledger_schema, day, cut)
    if seal_store.store(conn, ledger_schema, seal, now_ms):
        return seal, None
    sealed = seal_store.load(conn, ledger_schema, day)
    assert sealed is not None
    return sealed, seal_store.compare(sealed, seal)


def closed_days_differences(conn: psycopg.Connection[Any], database_url: str, sources: Sequence[Source],
                            ledger_schema: str, cut: Cut, first: datetime.date | None,
                            last: datetime.date | None) -> list[Difference]:
    """Every closed day between ``first`` and ``last`` beside its seal."""
    out: list[Difference] = []
    for day in seal_store.closed_days(conn, ledger_schema, first, last):
        sealed = seal_store.load(conn, ledger_schema, day)
        assert sealed is not None
        out += seal_store.compare(sealed, seal_day(conn, database_url, sources, ledger_schema, day, cut))
    return out
