"""The ledger on a real PostgreSQL: a simulated room's history (several tables, hundreds
of hands, buy-ins and top-ups through the cashier, players leaving) booked and
reconciled; exactly once when killed mid-batch, with two instances at once, and from
zero again; a corrupted entry and an altered stored event caught and named; the
command line's reports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from studroom.domain.events import HandEnded, TableEvent
from studroom.projections.ledger import schema
from studroom.projections.ledger.table_audit import BOOKS_VS_STORE, HAND
from studroom.projections.ledger.bootstrap import KILL_AT_VAR
from studroom.projections.ledger.entries import (
    BUY_IN,
    CASH_OUT,
    CASH_OUT_CREDIT,
    REFUND_BUY_IN,
    WITHDRAWAL,
)
from studroom.projections.ledger.projector import Projector
from studroom.projections.ledger.reconcile import Scope, reconcile
from studroom.projections.ledger.sources import Source, cashier_source, table_sources
from studroom.tools.stored_room import store_room
from studroom.services.cli.main import main
from studroom.services.store.codec import register_event_types
from studroom.services.store.postgres import PostgresEventStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


class History:
    """A simulated room stored in schemas of its own: ``<prefix>_p0``, ``_p1``, ``_cashier``."""

    def __init__(self, database_url: str, events: int, tables: int) -> None:
        self.url = database_url
        self.prefix = f"t{uuid.uuid4().hex[:8]}"
        self.stores = [f"{self.prefix}_p0", f"{self.prefix}_p1"]
        self.cashier = f"{self.prefix}_cashier"
        self.events = store_room(database_url, self.stores, self.cashier, events=events, tables=tables,
                                 prefix=self.prefix)
        self.schemas = [*self.stores, self.cashier]

    def sources(self) -> list[Source]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            return [*table_sources(conn, schemas=self.stores), cashier_source(self.cashier)]

    def books(self, name: str) -> str:
        books = f"{self.prefix}_{name}"
        self.schemas.append(books)
        return books

    def book(self, name: str, **options: Any) -> str:
        books = self.books(name)
        projector = Projector(self.url, self.sources(), ledger_schema=books, **options)
        try:
            assert projector.catch_up() == self.events
        finally:
            projector.close()
        return books

    def cli(self, books: str, *args: str) -> list[str]:
        return [*args, "--schema", self.stores[0], "--schema", self.stores[1], "--cashier-schema", self.cashier,
                "--ledger-schema", books]

    def drop(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            for s in self.schemas:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(s)))


@pytest.fixture(scope="module")
def history(database_url: str) -> Iterator[History]:
    """Six tables, two table stores, about 500 hands."""
    h = History(database_url, events=40_000, tables=6)
    yield h
    h.drop()


@pytest.fixture(scope="module")
def booked(history: History) -> str:
    return history.book("ledger")


def rows(url: str, books: str) -> list[tuple[Any, ...]]:
    """Everything in the books, in order."""
    s = sql.Identifier(books)
    with psycopg.connect(url, autocommit=True) as conn:
        return [*conn.execute(sql.SQL("SELECT * FROM {}.entries ORDER BY store, notification, seq").format(s)),
                *conn.execute(sql.SQL("SELECT * FROM {}.positions ORDER BY store").format(s)),
                *conn.execute(sql.SQL("SELECT * FROM {}.books ORDER BY store, stream").format(s))]


def count(url: str, books: str, where: str = "TRUE") -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        query = sql.SQL("SELECT count(*) FROM {}.entries WHERE " + where).format(sql.Identifier(books))
        return conn.execute(query).fetchone()[0]  # type: ignore[index]


def test_hundreds_of_hands_with_buy_ins_top_ups_and_leavers_reconcile_with_no_difference(history: History,
                                                                                         booked: str) -> None:
    result = reconcile(history.url, history.sources(), ledger_schema=booked)
    assert result.clean, result.differences[:5]
    assert result.tables == 6 and result.hands >= 300
    figures = {line.name: line for line in result.equation}
    assert all(line.domain in (None, line.books) for line in result.equation)
    assert figures["chips on the tables"].books > 0 and figures["rake"].books > 0
    assert figures["account balances"].books > 0 and figures["withdrawals"].books > 0
    for kind in (BUY_IN, CASH_OUT, CASH_OUT_CREDIT, REFUND_BUY_IN, WITHDRAWAL):
        assert count(history.url, booked, f"kind = '{kind}'") > 0, kind
    for scope in (Scope(table=f"{history.prefix}-2"), Scope(table=f"{history.prefix}-2", hand=7),
                  Scope(player=f"{history.prefix}-1-p1"), Scope.days("2025-12-01", "2025-12-01")):
        assert reconcile(history.url, history.sources(), ledger_schema=booked, scope=scope).clean


def test_a_rebuild_from_zero_gives_identical_books(history: History, booked: str) -> None:
    again = history.book("again", batch_size=777)
    before = rows(history.url, again)
    with psycopg.connect(history.url, autocommit=True) as conn:
        schema.drop(conn, again)
    assert history.book("again") == again
    assert rows(history.url, again) == before == rows(history.url, booked)


def test_two_instances_at_once_book_every_event_exactly_once(history: History, booked: str) -> None:
    books = history.books("twice")
    projectors = [Projector(history.url, history.sources(), ledger_schema=books, batch_size=300) for _ in range(2)]
    done = [0, 0]

    def run(i: int) -> None:
        done[i] = projectors[i].catch_up()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in projectors:
        p.close()
    assert sum(done) == history.events and min(done) > 0
    assert rows(history.url, books) == rows(history.url, booked)


def _serve(history: History, books: str, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "studroom.services.cli", *history.cli(books, "serve", "ledger"),
         "--batch-size", "500", "--log-level", "WARNING"],
        env={**os.environ, "STUDROOM_DATABASE_URL": history.url, **env},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _position(url: str, books: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        if not schema.exists(conn, books):
            return 0
        query = sql.SQL("SELECT coalesce(sum(position), 0) FROM {}.positions").format(sql.Identifier(books))
        return conn.execute(query).fetchone()[0]  # type: ignore[index]


def test_a_ledger_killed_mid_batch_and_restarted_ends_identical(history: History, booked: str) -> None:
    books = history.books("killed")
    killed = _serve(history, books, **{KILL_AT_VAR: "5"})
    assert killed.wait(60) == -signal.SIGKILL
    position = _position(history.url, books)
    assert 0 < position < history.events, "the first four batches committed, the fifth did not"
    with psycopg.connect(history.url, autocommit=True) as conn:
        booked_now = conn.execute(sql.SQL("SELECT count(DISTINCT (store, notification)) FROM {}.entries")
                                  .format(sql.Identifier(books))).fetchone()[0]  # type: ignore[index]
    assert booked_now <= position                          # nothing of the killed batch remains
    again = _serve(history, books)
    try:
        deadline = time.monotonic() + 60
        while _position(history.url, books) < _position(history.url, booked):
            assert time.monotonic() < deadline and again.poll() is None
            time.sleep(0.2)
    finally:
        again.send_signal(signal.SIGTERM)
        assert again.wait(20) == 0
    assert rows(history.url, books) == rows(history.url, booked)


def test_a_corrupted_ledger_entry_is_caught_and_named(history: History, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUDROOM_DATABASE_URL", history.url)
    books = history.book("corrupt")
    s = sql.Identifier(books)
    with psycopg.connect(history.url, autocommit=True) as conn:
        store, stream, version, hand = conn.execute(sql.SQL(
            "UPDATE {}.entries SET amount = amount + 1 WHERE (store, notification, seq) = "
            "(SELECT store, notification, seq FROM {}.entries WHERE kind = 'call' ORDER BY notification LIMIT 1 "
            "OFFSET 100) RETURNING store, stream, version, hand_no").format(s, s)).fetchone()  # type: ignore[misc]
    result = reconcile(history.url, history.sources(), ledger_schema=books)
    first = result.differences[0]
    assert first.check == BOOKS_VS_STORE and first.event == f"{store} {stream} v{version} (Acted)"
    assert {(d.table, d.hand) for d in result.differences if d.check == HAND} == {(stream, hand)}
    assert main(history.cli(books, "ledger", "reconcile", "--hand", f"{stream}#{hand}")) == 1
    out = capsys.readouterr().out
    assert f"{store} {stream} v{version} (Acted)" in out and "differences" in out
    assert main(history.cli(books, "ledger", "reconcile", "--hand", f"{stream}#{hand + 1}")) == 0


def test_an_altered_stored_event_is_caught_and_named(database_url: str) -> None:
    small = History(database_url, events=6_000, tables=3)
    try:
        books = small.book("ledger")
        register_event_types(TableEvent)
        with PostgresEventStore(database_url, schema=small.stores[0], create_table=False) as store:
            note = next(n for n in store.read_notifications(1, 10_000)
                        if type(n.event).__name__ == "Acted" and n.event.amount and n.version > 200)
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(sql.SQL(
                "UPDATE {}.events SET state = convert_to(jsonb_set(convert_from(state, 'UTF8')::jsonb, '{{amount}}', "
                "to_jsonb((convert_from(state, 'UTF8')::jsonb->>'amount')::int + 10))::text, 'UTF8') "
                "WHERE originator_id = %s AND originator_version = %s").format(sql.Identifier(small.stores[0])),
                (note.stream_id, note.version))
        where = f"{small.stores[0]} {note.stream_id} v{note.version} (Acted)"
        result = reconcile(database_url, small.sources(), ledger_schema=books)
        assert result.differences[0].check == BOOKS_VS_STORE and result.differences[0].event == where
        with psycopg.connect(database_url, autocommit=True) as conn:
            schema.drop(conn, books)
        small.book("ledger")                             # rebuilt from the altered store
        result = reconcile(database_url, small.sources(), ledger_schema=books)
        hands = {(d.table, d.hand) for d in result.differences if d.check == HAND}
        assert len(hands) == 1 and next(iter(hands))[0] == note.stream_id
    finally:
        small.drop()


def test_the_rake_report_and_a_statement_agree_with_the_stores(history: History, booked: str,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUDROOM_DATABASE_URL", history.url)
    rake = 0
    register_event_types(TableEvent)
    for s in history.stores:
        with PostgresEventStore(history.url, schema=s, create_table=False) as store:
            rake += sum(n.event.rake for n in store.read_notifications(1, 100_000) if isinstance(n.event, HandEnded))
    assert main(history.cli(booked, "ledger", "rake", "--csv")) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "table,hands raked,pots raked,rake" and lines[-1].endswith(f",{rake}")
    assert len(lines) == 1 + 6 + 1
    assert main(history.cli(booked, "ledger", "rake", "--by", "day")) == 0
    assert f"{rake:,}" in capsys.readouterr().out.splitlines()[-1]
    player = f"{history.prefix}-1-p1"
    assert main(history.cli(booked, "ledger", "statement", player)) == 0
    out = capsys.readouterr().out
    assert "deposit" in out and "buy-in" in out and "hand" in out and out.strip().splitlines()[-1].startswith("deposited")
