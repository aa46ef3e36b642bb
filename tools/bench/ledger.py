"""How fast does the ledger book a room's history?  Rebuilding the books from zero over
stored events (at least 100,000), beside the bare read of the same notification logs
in the same run (docs/design/benchmarks.md).

    studroom bench ledger [--events 100000] [--tables 16]

The history is played here: tables of random legal play as a room with a cashier
stores them (:class:`SimulatedTable`: buy-ins and top-ups from the cashier, players
leaving between hands and during them, newcomers, timeouts), appended to real event
stores.  The tests build their rooms with it too.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import msgspec
import psycopg
from psycopg import sql
from studroom.domain.account import Account, AccountEvent
from studroom.domain.account import stream_id as account_stream
from studroom.domain.authority import Sender
from studroom.domain.commands import (
    BuyIn,
    Command,
    Leave,
    Muck,
    OpenTable,
    PostAnte,
    Show,
    SitDown,
    StartHand,
    Timeout,
)
from studroom.domain.config import Rake, TableConfig
from studroom.domain.deck import SEED_BYTES
from studroom.domain.errors import MUST_SHOW, DomainError
from studroom.domain.events import Event, PlayerLeft, TurnStarted
from studroom.domain.simulate import STAKES, choose
from studroom.domain.table import Table

from studroom.services.runtime.arguments import positive_int
from studroom.services.store.layout import store_of_table, store_schema
from studroom.services.store.postgres import PostgresEventStore
from .database import bench_database

HELP = "ledger: events/s booked rebuilding the books from zero, beside the bare read of the stores"

CASHIER = Sender("service", "cashier")
GAMES = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")
SEATS = 6
BUY_IN = 1000
BANKROLL = 10_000               # a deposit when an account runs short of a buy-in
WITHDRAW = 0.3                  # chance that a player who left withdraws half his balance
REFUSED_TOP_UP = 0.05           # chance that a top-up asks more than the table allows (refunded)
LEAVE_BETWEEN_HANDS = 0.03     # chance that a seated player leaves before a hand
LEAVE_DURING_HAND = 0.004      # chance, at each turn, that someone in the hand leaves
SIT_DOWN = 0.3                 # chance that a free seat is taken before a hand
TIMEOUT = 0.02                 # chance that a turn times out
BATCH = 2000                   # notifications read at a time (the ledger's batch)


class SimulatedCashier:
    """The players' accounts as the cashier keeps them (domain/account.py): deposits,
    buy-in reservations confirmed or refunded, cash-outs, withdrawals."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.accounts: dict[str, Account] = {}
        self.new: dict[str, list[AccountEvent]] = {}     # events not yet taken (``take``)
        self._ids = itertools.count(1)

    def _book(self, player: str, event: AccountEvent | None) -> None:
        if event is not None:
            self.new.setdefault(player, []).append(event)

    def reserve(self, player: str, table_id: str, seat: int, amount: int, command_id: str, at_ms: int) -> None:
        account = self.accounts.setdefault(player, Account(player))
        if account.balance < amount:
            self._book(player, account.deposit(BANKROLL, f"deposit-{next(self._ids)}", "floor", at_ms))
        self._book(player, account.reserve(table_id, seat, amount, command_id, str(next(self._ids)), at_ms))

    def settle(self, player: str, table_id: str, command_id: str, refused: str | None, at_ms: int) -> None:
        account = self.accounts[player]
        self._book(player, account.confirm(table_id, command_id, at_ms) if refused is None
                   else account.refund(table_id, command_id, refused, at_ms))

    def cash_out(self, left: PlayerLeft, table_id: str, version: int, at_ms: int) -> None:
        account = self.accounts[left.player]
        self._book(left.player, account.cash_out(table_id, version, left.seat, left.cashed_out, at_ms))
        if account.balance and self.rng.random() < WITHDRAW:
            self._book(left.player, account.withdraw(account.balance // 2 or account.balance,
                                                     f"withdrawal-{next(self._ids)}", "floor", at_ms))

    def take(self) -> dict[str, list[AccountEvent]]:
        new, self.new = self.new, {}
        return new


class SimulatedTable:
    """One table played by random legal moves, stored as a room with a cashier stores it."""

    def __init__(self, table_id: str, game: str, rng: random.Random, now_ms: int, cashier: SimulatedCashier) -> None:
        self.table_id = table_id
        self.table = Table()
        self.rng = rng
        self.now_ms = now_ms
        self.cashier = cashier
        self.version = 0            # events of the table so far
        self.buy_ins = 0            # the cashier's command ids at this table
        self.newcomers = 0
        config = TableConfig(game=game, stakes=STAKES, rake=Rake(basis_points=500, cap=40), seats=SEATS)
        self.opening = self._run(OpenTable(table_id=table_id, config=config))

    def _run(self, command: Command, by: Sender | None = None) -> list[Event]:
        """Carry a command out at the table's clock; cash out whoever left."""
        self.now_ms += self.rng.randrange(100, 3000)
        events = self.table.execute(msgspec.structs.replace(command, now_ms=self.now_ms), by)
        for version, event in enumerate(events, start=self.version + 1):
            if type(event) is PlayerLeft and event.cashed_out:
                self.cashier.cash_out(event, self.table_id, version, self.now_ms)
        self.version += len(events)
        return events

    def _buy_in(self, seat: int, amount: int) -> list[Event]:
        """The cashier's saga: reserve, BuyIn as the service "cashier", confirm or refund."""
        self.buy_ins += 1
        command_id, player = str(self.buy_ins), self.table.seats[seat].player
        self.cashier.reserve(player, self.table_id, seat, amount, command_id, self.now_ms)
        try:
            events = self._run(BuyIn(seat=seat, amount=amount, player=player, command_id=command_id), CASHIER)
        except DomainError as refused:
            self.cashier.settle(player, self.table_id, command_id, refused.code, self.now_ms)
            return []
        self.cashier.settle(player, self.table_id, command_id, None, self.now_ms)
        return events

    def between_hands(self) -> list[Event]:
        """Players leave, newcomers sit down and buy in, short stacks top up (now and
        then above the table's maximum: refused, refunded)."""
        events: list[Event] = list(self.opening)
        self.opening = []
        seats = self.table.seats
        for seat in sorted(seats):
            if self.rng.random() < LEAVE_BETWEEN_HANDS or seats[seat].stack == 0 and self.rng.random() < 0.5:
                events += self._run(Leave(seat=seat))
        for seat in range(SEATS):
            if seat not in seats and (len(seats) < 2 or self.rng.random() < SIT_DOWN):
                self.newcomers += 1
                events += self._run(SitDown(seat=seat, player=f"{self.table_id}-p{self.newcomers}"))
                events += self._buy_in(seat, BUY_IN)
        for seat, state in sorted(seats.items()):
            if state.stack < 10 * STAKES.small_bet:
                too_much = self.rng.random() < REFUSED_TOP_UP
                events += self._buy_in(seat, 5 * BUY_IN if too_much else BUY_IN - state.stack)
        return events

    def hand(self) -> list[Event]:
        """One hand from a fresh seed to its end."""
        events = self._run(StartHand(seed=self.rng.randbytes(SEED_BYTES).hex()))
        turn = _last_turn(events)
        while (hand := self.table.hand) is not None and turn is not None:
            seated = [s for s in hand.players if s in self.table.seats and not self.table.seats[s].leaving]
            if seated and self.rng.random() < LEAVE_DURING_HAND:
                new = self._run(Leave(seat=self.rng.choice(seated)))
            else:
                new = self._answer(turn, hand)
            events += new
            turn = _last_turn(new, turn)
        return events

    def _answer(self, turn: TurnStarted, hand: Any) -> list[Event]:
        if self.rng.random() < TIMEOUT:
            return self._run(Timeout(turn=turn.turn))
        if turn.kind == "ante":
            return self._run(PostAnte(seat=next(s for s, p in hand.players.items() if not p.posted and not p.folded)))
        command = choose(turn, self.rng)
        try:
            return self._run(command)
        except DomainError as refused:
            if refused.code != MUST_SHOW:          # R22: the last claimant may not muck
                raise
            assert isinstance(command, Muck)
            return self._run(Show(seat=command.seat))


def _last_turn(events: Sequence[Event], turn: TurnStarted | None = None) -> TurnStarted | None:
    """The turn the last of ``events`` opened, else ``turn``."""
    return next((e for e in reversed(events) if type(e) is TurnStarted), turn)


def simulated_room(tables: int, seed: int = 1, prefix: str = "sim") -> Iterator[Played]:
    """One table at a time, round robin, for ever: its changes between hands and its
    next hand, and the cashier's events that came with them."""
    rng = random.Random(seed)
    cashier = SimulatedCashier(rng)
    played = [SimulatedTable(f"{prefix}-{i}", GAMES[i % len(GAMES)], rng, 1_764_600_000_000 + i, cashier)
              for i in range(tables)]
    while True:
        for t in played:
            events = t.between_hands() + t.hand()
            yield Played(t.table_id, events, cashier.take())


class Played(NamedTuple):
    table_id: str
    events: list[Event]
    accounts: dict[str, list[AccountEvent]]    # player -> his account's new events


class _Appender:
    """Appends to the stores, one transaction per store for many streams."""

    def __init__(self, database_url: str, schemas: Sequence[str]) -> None:
        self.stores = [PostgresEventStore(database_url, schema=s) for s in schemas]
        self.versions: dict[tuple[int, str], int] = {}
        self.pending: dict[int, list[tuple[str, int, list[Any]]]] = {}

    def add(self, index: int, stream: str, events: list[Any]) -> None:
        if events:
            before = self.versions.get((index, stream), 0)
            self.pending.setdefault(index, []).append((stream, before, events))
            self.versions[(index, stream)] = before + len(events)

    def flush(self) -> None:
        for index, batch in self.pending.items():
            self.stores[index].append(batch)
        self.pending.clear()

    def close(self) -> None:
        for store in self.stores:
            store.close()


def store_room(database_url: str, schemas: Sequence[str], cashier_schema: str, *, events: int, tables: int,
               seed: int = 1, prefix: str = "sim") -> int:
    """Play ``tables`` simulated tables until about ``events`` table events are stored
    in the stores ``schemas`` (each table in the store the layout gives it), their
    accounts in the cashier's store ``cashier_schema``: how many events, all stores."""
    appender = _Appender(database_url, [*schemas, cashier_schema])
    cashier = len(schemas)
    stored = played = 0
    try:
        for table_id, new, accounts in simulated_room(tables, seed, prefix):
            appender.add(store_of_table(table_id, len(schemas)), table_id, new)
            for player, account_events in accounts.items():
                appender.add(cashier, account_stream(player), account_events)
                stored += len(account_events)
            stored += len(new)
            played += 1
            if played % tables == 0 or stored >= events:
                appender.flush()
            if stored >= events:
                return stored
    finally:
        appender.close()
    return stored


def _bare_read(database_url: str, schemas: Sequence[str]) -> int:
    """Read every notification of the stores through the stores' own reader (the
    ledger's read, without booking): how many."""
    read = 0
    for schema in schemas:
        with PostgresEventStore(database_url, schema=schema, create_table=False) as store:
            position = 0
            while notes := store.read_notifications(position + 1, BATCH):
                read += len(notes)
                position = notes[-1].id
    return read


def bench(database_url: str, *, events: int, tables: int, stores: int) -> dict[str, float]:
    """Store a simulated room's history, then time the bare read of its notification
    logs and the books' rebuild from zero over it."""
    from studroom.projections.ledger.projector import Projector
    from studroom.projections.ledger.sources import cashier_source, table_sources

    prefix = f"bench_{uuid.uuid4().hex[:8]}"
    schemas = [store_schema(j, f"{prefix}_p") for j in range(stores)]
    cashier, books = f"{prefix}_cashier", f"{prefix}_ledger"
    results: dict[str, float] = {}
    try:
        started = time.perf_counter()
        stored = store_room(database_url, schemas, cashier, events=events, tables=tables)
        results["events stored (tables and cashier)"] = stored
        results["storing them: events/s"] = stored / (time.perf_counter() - started)
        started = time.perf_counter()
        read = _bare_read(database_url, [*schemas, cashier])
        results["baseline: bare read of the notification logs: events/s"] = read / (time.perf_counter() - started)
        with psycopg.connect(database_url, autocommit=True) as conn:
            sources = [*table_sources(conn, schemas=schemas), cashier_source(cashier)]
        projector = Projector(database_url, sources, ledger_schema=books)
        try:
            started = time.perf_counter()
            booked = projector.catch_up()
            results["ledger rebuild from zero: events/s"] = booked / (time.perf_counter() - started)
        finally:
            projector.close()
        with psycopg.connect(database_url, autocommit=True) as conn:
            results["entries booked"] = conn.execute(
                sql.SQL("SELECT count(*) FROM {}.entries").format(sql.Identifier(books))).fetchone()[0]  # type: ignore[index]
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            for schema in [*schemas, cashier, books]:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    return results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=positive_int, default=100_000, help="events to store and book (default 100000)")
    parser.add_argument("--tables", type=positive_int, default=16, help="simulated tables (default 16)")
    parser.add_argument("--stores", type=positive_int, default=2, help="table stores (default 2)")


def run(args: argparse.Namespace) -> int:
    with bench_database() as (database_url, where):
        print(f"ledger benchmark on {where}: {args.events:,} events, {args.tables} tables, {args.stores} stores")
        for name, value in bench(database_url, events=args.events, tables=args.tables, stores=args.stores).items():
            print(f"{name:58s} {value:12,.0f}")
    return 0
