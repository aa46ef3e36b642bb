"""What the accountant asks the books: the rake per table or per day, a player's statement.

Both read the books only (``studroom ledger rake``, ``studroom ledger statement``),
as of a cut (cut.py) when given one; the rows go to :func:`.text.render`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg
from psycopg import sql

from . import accounts
from .cut import Cut, upto
from .entries import (
    BUY_IN,
    CASH_OUT,
    CASH_OUT_CREDIT,
    CREDIT,
    DEPOSIT,
    REFUND_BUY_IN,
    RESERVE,
    WITHDRAWAL,
)
from .schema import LEDGER_SCHEMA
from .text import moment

RAKE_BY: Final = {"table": "table_id", "day": "day"}
_DAY: Final = "to_char(to_timestamp(at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
_NOT_A_HAND: Final = (DEPOSIT, WITHDRAWAL, RESERVE, REFUND_BUY_IN, CASH_OUT_CREDIT, BUY_IN, CREDIT, CASH_OUT)


def rake(conn: psycopg.Connection[Any], by: str, ledger_schema: str = LEDGER_SCHEMA,
         cut: Cut | None = None) -> tuple[list[str], list[list[Any]]]:
    """The rake per table or per day (UTC): hands and pots raked, chips; a total last."""
    key = sql.SQL(_DAY) if by == "day" else sql.Identifier(RAKE_BY[by])
    within, params = _within(cut)
    query = sql.SQL("SELECT {key} AS k, count(DISTINCT (table_id, hand_no)), count(*), sum(amount)::bigint "
                    "FROM {s}.entries WHERE kind = 'rake' AND {within} GROUP BY k ORDER BY k").format(
        key=key, s=sql.Identifier(ledger_schema), within=within)
    rows = [list(row) for row in conn.execute(query, params).fetchall()]
    total = ["total", *(sum(row[i] for row in rows) for i in (1, 2, 3))]
    return [by, "hands raked", "pots raked", "rake"], [*rows, total]


@dataclass
class Line:
    """One line of a statement: how the player's chips changed, and where."""

    at_ms: int | None
    what: str
    table: str | None
    hand: int | None
    account: int = 0          # his balance at the cashier
    transit: int = 0          # between the cashier and a table
    tables: int = 0           # on his seats and in his hands


def _within(cut: Cut | None) -> tuple[sql.Composable, tuple[Any, ...]]:
    """Entries as of ``cut``; every entry without one."""
    return (sql.SQL("true"), ()) if cut is None else upto(cut)


def statement(conn: psycopg.Connection[Any], player: str, ledger_schema: str = LEDGER_SCHEMA,
              cut: Cut | None = None) -> tuple[list[str], list[list[Any]], dict[str, int]]:
    """Every movement of ``player``'s chips in time order, a hand's bets and winnings as
    one line; and his totals (deposited, withdrawn, won at the tables, where his
    chips are now)."""
    within, params = _within(cut)
    query = sql.SQL("SELECT store, at_ms, kind, debit, credit, amount, table_id, hand_no FROM {}.entries "
                    "WHERE player = %s AND {} ORDER BY store, notification, seq").format(
        sql.Identifier(ledger_schema), within)
    stores: dict[str, list[Line]] = {}
    hands: dict[tuple[str, int], Line] = {}
    for store, at_ms, kind, debit, credit, amount, table, hand in conn.execute(query, (player, *params)).fetchall():
        if kind in _NOT_A_HAND or hand is None:
            line = Line(at_ms, kind, table, hand)
            stores.setdefault(store, []).append(line)
        else:
            line = hands.get((table, hand)) or Line(at_ms, "hand", table, hand)
            if (table, hand) not in hands:
                hands[(table, hand)] = line
                stores.setdefault(store, []).append(line)
            line.at_ms = at_ms if at_ms is not None else line.at_ms
        _move(line, debit, amount, player)
        _move(line, credit, -amount, player)
    lines = sorted((line for in_store in stores.values() for line in _dated(in_store)),
                   key=lambda x: (x.at_ms is None, x.at_ms or 0))
    totals = {
        "deposited": sum(line.account for line in lines if line.what == DEPOSIT),
        "withdrawn": -sum(line.account for line in lines if line.what == WITHDRAWAL),
        "won at the tables": sum(line.tables for line in lines if line.what == "hand"),
        "account": sum(line.account for line in lines),
        "in transit": sum(line.transit for line in lines),
        "at the tables": sum(line.tables for line in lines),
    }
    header = ["when (UTC)", "what", "table", "hand", "account", "in transit", "at the tables"]
    rows = [[moment(x.at_ms), x.what, x.table, x.hand, x.account or None, x.transit or None, x.tables or None]
            for x in lines]
    return header, rows, totals


def _move(line: Line, account: str, amount: int, player: str) -> None:
    cls = accounts.class_of(account)
    if cls == accounts.PLAYER:
        line.account += amount
    elif cls == accounts.TRANSIT:
        line.transit += amount
    elif cls == accounts.SEAT and account.endswith(f":{player}"):
        line.tables += amount


def _dated(lines: Sequence[Line]) -> Sequence[Line]:
    """One store's lines (in store order), a line of unknown time dated like the next
    known one (a buy-in before a table's first turn: the table's clock starts there)."""
    known: int | None = None
    for line in reversed(lines):
        if line.at_ms is None:
            line.at_ms = known
        known = line.at_ms
    return lines
