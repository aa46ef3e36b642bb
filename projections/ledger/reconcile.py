"""Reconcile the books with the stores: ``studroom ledger reconcile``.

Everything is read as of one cut (cut.py): each store's events up to its notification
id in the cut, the entries the books hold of those notifications.  For every stream
of every store (or those the scope names), the stored events are audited beside the
booked entries (table_audit.py, account_audit.py); then the books' totals make the
room's equation

    deposits + operator credits = withdrawals + account balances + chips in transit
                                  + chips on the tables + rake

whose parts are compared with the domain's own figures where it has them (the
replays of the tables and of the accounts; the transfers between the cashier and the
tables that are not completed yet, account_audit.py).  Read only: book up to a cut first
(:func:`.cut.book_to_cut`); without a cut, the books' positions are the cut (a room at
rest).
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import psycopg
from psycopg import sql
from studroom.services.store.inspect import (
    open_reader,
    store_exists,
    stream_upto,
    streams_upto,
)

from . import accounts
from .account_audit import AccountAudit, transfers
from .conservation import ChipCheck
from .cut import Cut, books_cut, upto
from .entries import CREDIT, DEPOSIT, WITHDRAWAL, Entry
from .schema import LEDGER_SCHEMA
from .schema import exists as books_exist
from .sources import Source
from .table_audit import Difference, TableAudit

EQUATION: Final = "equation"
DAY_MS: Final = 86_400_000


@dataclass(frozen=True)
class Scope:
    """What to reconcile: everything, or one hand, one table, one player's hands and
    accounts, or what happened between two days (UTC, both included)."""

    table: str | None = None
    hand: int | None = None
    player: str | None = None
    from_ms: int | None = None
    to_ms: int | None = None      # exclusive

    @classmethod
    def days(cls, first: str | None, last: str | None) -> Scope:
        """The days ``first`` .. ``last`` (YYYY-MM-DD; either may be open)."""
        return cls(from_ms=None if first is None else _day_ms(first),
                   to_ms=None if last is None else _day_ms(last) + DAY_MS)

    @property
    def everything(self) -> bool:
        return self == Scope()

    def covers(self, d: Difference, hands_of_player: set[tuple[str, int]]) -> bool:
        if self.table is not None and d.table != self.table:
            return False
        if self.hand is not None and d.hand != self.hand:
            return False
        if self.player is not None and d.player != self.player and (d.table, d.hand) not in hands_of_player:
            return False
        if self.from_ms is not None and (d.at_ms is None or d.at_ms < self.from_ms):
            return False
        return self.to_ms is None or (d.at_ms is not None and d.at_ms < self.to_ms)


def _day_ms(day: str) -> int:
    date = datetime.date.fromisoformat(day)
    return int(datetime.datetime(date.year, date.month, date.day, tzinfo=datetime.UTC).timestamp() * 1000)


class Line(NamedTuple):
    """One figure of the equation: the books' and, where it has one, the domain's."""

    name: str
    books: int
    domain: int | None = None


@dataclass
class Reconciliation:
    differences: list[Difference] = field(default_factory=list)
    equation: list[Line] = field(default_factory=list)
    chips: ChipCheck = field(default_factory=ChipCheck)     # the tables' chips in the domain's replays

    @property
    def clean(self) -> bool:
        return not self.differences

    @property
    def tables(self) -> int:
        return self.chips.tables

    @property
    def hands(self) -> int:
        return self.chips.hands

    @property
    def events(self) -> int:
        return self.chips.events


def reconcile(database_url: str, sources: Sequence[Source], *, ledger_schema: str = LEDGER_SCHEMA,
              scope: Scope = Scope(), cut: Cut | None = None) -> Reconciliation:
    """Audit the stores' streams in ``scope`` beside the books, the transfers between
    the cashier and the tables, and the equation, all as of ``cut`` (default: the
    books' positions)."""
    result = Reconciliation()
    with psycopg.connect(database_url, autocommit=True) as conn:
        if not books_exist(conn, ledger_schema):
            result.differences.append(Difference(EQUATION, f"there are no books in schema {ledger_schema}"))
            return result
        booked = books_cut(conn, ledger_schema)
        books = _Books(conn, ledger_schema, booked if cut is None else cut)
        result.differences += _short_of(booked, books.cut)
        audits = [audit for source in sources if store_exists(conn, source.schema)
                  for audit in _audits(conn, database_url, source, books, scope)]
        tables = [a for a in audits if isinstance(a, TableAudit)]
        cashier = [a for a in audits if isinstance(a, AccountAudit)]
        chips = result.chips
        for table in tables:
            chips.add(table.finish())
        for account in cashier:
            account.finish()
        result.differences = [d for audit in audits for d in audit.differences]
        moved = transfers(tables, cashier)
        result.differences += moved.differences
        if scope.everything:
            balances = sum(a.account.balance for a in cashier)
            result.equation = books.equation(chips, balances, moved.in_transit)
            result.differences += _unequal(result.equation)
    hands_of_player = {(t.table, hand) for t in tables for hand, who in t.players.items() if scope.player in who}
    result.differences = [d for d in result.differences if scope.covers(d, hands_of_player)]
    return result


def _audits(conn: psycopg.Connection[Any], database_url: str, source: Source, books: _Books,
            scope: Scope) -> list[TableAudit | AccountAudit]:
    """Each stream of one store in scope, audited up to the cut."""
    position = books.cut.get(source.name, 0)
    streams = set(streams_upto(conn, source.schema, position)) | books.streams(source.name)
    if scope.table is not None:              # the table, and the accounts of its buy-ins and cash-outs
        streams &= {scope.table} | books.streams(source.name, table=scope.table)
    elif scope.player is not None:
        streams &= books.streams(source.name, player=scope.player)
    store = open_reader(database_url, source.schema)
    audits = []
    try:
        for stream in sorted(streams):
            booked = books.entries(source.name, stream)
            audit = source.bookkeeping.audit(source.name, stream)
            for version, event in stream_upto(conn, store, stream, position):
                audit.event(version, event, booked.pop(version, []))
            for version in sorted(booked):
                audit.missing(version)
            audits.append(audit)
    finally:
        store.close()
    return audits


def _short_of(booked: Cut, cut: Cut) -> list[Difference]:
    """The stores whose books stop before the cut (their booking failed)."""
    return [Difference(EQUATION, f"the books of {store} stop at notification {booked.get(store, 0)}, "
                                 f"the cut is at {position}")
            for store, position in sorted(cut.items()) if booked.get(store, 0) < position]


class _Books:
    """Reading the books as of a cut."""

    def __init__(self, conn: psycopg.Connection[Any], ledger_schema: str, cut: Cut) -> None:
        self.conn = conn
        self.s = sql.Identifier(ledger_schema)
        self.cut = cut
        self._upto, self._cut_params = upto(cut)

    def streams(self, store: str, *, player: str | None = None, table: str | None = None) -> set[str]:
        """The streams of a store the books hold entries of (of a player, of a table)."""
        query = sql.SQL("SELECT DISTINCT stream FROM {}.entries WHERE store = %s AND {}").format(self.s, self._upto)
        params: list[Any] = [store, *self._cut_params]
        for column, value in (("player", player), ("table_id", table)):
            if value is not None:
                query += sql.SQL(" AND {} = %s").format(sql.Identifier(column))
                params.append(value)
        return {stream for (stream,) in self.conn.execute(query, params).fetchall()}

    def entries(self, store: str, stream: str) -> dict[int, list[Entry]]:
        """A stream's booked entries by version."""
        query = sql.SQL("SELECT version, kind, debit, credit, amount, table_id, hand_no, player, at_ms "
                        "FROM {}.entries WHERE store = %s AND stream = %s AND {} ORDER BY version, seq").format(
            self.s, self._upto)
        out: dict[int, list[Entry]] = defaultdict(list)
        for version, *entry in self.conn.execute(query, (store, stream, *self._cut_params)).fetchall():
            out[version].append(Entry(*entry))
        return out

    def equation(self, chips: ChipCheck, balances_: int, in_transit: int) -> list[Line]:
        """The books' figures of the equation, beside the domain's: the replays of the
        tables (``chips``) and of the accounts (their ``balances_``), the transfers not
        yet completed (``in_transit``)."""
        balances: dict[str, int] = defaultdict(int)
        kinds: dict[str, int] = defaultdict(int)
        query = sql.SQL("SELECT debit, credit, kind, sum(amount)::bigint FROM {}.entries WHERE {} "
                        "GROUP BY debit, credit, kind").format(self.s, self._upto)
        for debit, credit, kind, amount in self.conn.execute(query, self._cut_params).fetchall():
            balances[accounts.class_of(debit)] += amount
            balances[accounts.class_of(credit)] -= amount
            kinds[kind] += amount
        on_tables = sum(balances[c] for c in accounts.ON_TABLES)
        return [
            Line("deposits", kinds[DEPOSIT]),
            Line("operator credits", kinds[CREDIT]),
            Line("withdrawals", kinds[WITHDRAWAL]),
            Line("account balances", balances[accounts.PLAYER], balances_),
            Line("chips in transit", balances[accounts.TRANSIT], in_transit),
            Line("chips on the tables", on_tables, chips.behind + chips.in_hand),
            Line("rake", balances[accounts.RAKE], chips.rake),
            Line("the world's balance", balances[accounts.WORLD]),
        ]


def equation_holds(lines: Sequence[Line]) -> bool:
    """deposits + credits = withdrawals + balances + transit + tables + rake."""
    f = {line.name: line.books for line in lines}
    return (f["deposits"] + f["operator credits"] == f["withdrawals"] + f["account balances"]
            + f["chips in transit"] + f["chips on the tables"] + f["rake"])


def _unequal(lines: Sequence[Line]) -> list[Difference]:
    out = [Difference(EQUATION, f"{line.name}: the domain counts {line.domain}, the books {line.books}")
           for line in lines if line.domain is not None and line.domain != line.books]
    if not equation_holds(lines):
        out.append(Difference(EQUATION, "deposits + operator credits != withdrawals + account balances + chips "
                                        "in transit + chips on the tables + rake"))
    return out
