"""Hands on the record: how fast are hands re-run and verified, and how fast is the
players' history rebuilt from zero?  Each beside a baseline of the same run
(docs/design/history.md, "Figures"):

- ``verify``: finished hands a second through ``studroom verify``'s check (every
  command re-run through the rules and compared, the deck audited), beside the bare
  replay of the same streams (``Table.replay``: applying the stored events);
- ``history rebuild``: events a second the history projection folds into the players'
  rows from zero (PostgreSQL, one transaction a batch), beside the bare read of the
  same notification log in batches of the same size.

    studroom bench history [--hands 3000] [--events 100000] [--tables 16]

The room is played here (:class:`PlayedTable`, which the tests play too): random
legal moves (domain/simulate.py) at tables of the three games, every command from its
sender with his ids and the service's clock, the cashier's buy-ins, the timer's
timeouts, players arriving and leaving (between hands and during them), players'
entropy with their antes (R32), and live dealers' tables (R28).
"""

from __future__ import annotations

import argparse
import random
import time
import uuid

import msgspec
import psycopg
from psycopg import sql
from studroom.domain.authority import Sender
from studroom.domain.commands import (
    BuyIn,
    Command,
    DealStreet,
    Leave,
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
from studroom.domain.events import Event, TurnStarted
from studroom.domain.simulate import STAKES, choose
from studroom.domain.table import Table
from studroom.domain.hands import spans

from studroom.services.runtime.arguments import positive_int
from .database import bench_database

HELP = "history: hands verified/s (re-run + deck audit) beside bare replay; history rebuild events/s beside bare reads"

GAMES = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")
BATCH = 2000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hands", type=positive_int, default=3000, help="hands to verify (default 3000)")
    parser.add_argument("--events", type=positive_int, default=100_000, help="stored events to rebuild from (default 100000)")
    parser.add_argument("--tables", type=positive_int, default=16, help="tables of the simulated room (default 16)")


TIMER = Sender("service", "timer")
CASHIER = Sender("service", "cashier")
FLOOR = Sender("operator", "floor")
START_MS = 1_764_601_200_000


class PlayedTable:
    """One table and its stream, played by random legal moves from ``seed``."""

    def __init__(self, table_id: str, game: str, seats: int, seed: int, *, live_dealer: bool = False) -> None:
        self.rng = random.Random(seed)
        self.table = Table()
        self.events: list[Event] = []
        self.now_ms = START_MS
        self.ids: dict[str, int] = {}
        self.newcomers = 0
        config = TableConfig(game=game, stakes=STAKES, rake=Rake(basis_points=500, cap=30), seats=seats,
                             auto_deal=not live_dealer)
        self.run(OpenTable(table_id=table_id, config=config), FLOOR)

    def run(self, command: Command, by: Sender | None = None) -> list[Event]:
        """Give the table a command, as the table service would: its clock, the sender's
        next id."""
        self.now_ms += self.rng.randrange(50, 4000)
        command_id = None
        if by is not None:
            command_id = self.ids[by.key] = self.ids.get(by.key, 0) + self.rng.randrange(1, 1000)
        made = self.table.execute(msgspec.structs.replace(
            command, now_ms=self.now_ms, command_id=None if command_id is None else str(command_id)), by)
        self.events += made
        return made

    def player(self, seat: int) -> Sender:
        return Sender("player", self.table.seats[seat].player)

    def between_hands(self) -> None:
        config = self.table.config
        assert config is not None
        for seat in sorted(self.table.seats):
            if self.rng.random() < 0.05 or self.table.seats[seat].stack < config.min_buy_in:
                self.run(Leave(seat=seat), self.player(seat))
        for seat in range(config.seats):
            seated = len(self.table.seats)
            if seat not in self.table.seats and seated < config.max_players and (seated < 2 or self.rng.random() < 0.3):
                self.newcomers += 1
                name = f"{self.table.table_id}-p{self.newcomers}"
                self.run(SitDown(seat=seat, player=name), Sender("player", name))
                self.run(BuyIn(seat=seat, amount=40 * STAKES.small_bet, player=name), CASHIER)

    def hand(self) -> None:
        """One hand to its end: players act (now and then one times out, or leaves)."""
        if self.table.config is not None and self.table.config.auto_deal:
            made = self.run(StartHand(seed=self.rng.randbytes(SEED_BYTES).hex()))
        else:
            made = self.run(StartHand(), FLOOR)
        turn = _turn(made, None)
        while (hand := self.table.hand) is not None:
            if hand.phase == "deal":
                made = self.deal()
            elif turn is not None and self.rng.random() < 0.04:
                made = self.run(Timeout(turn=turn.turn), TIMER)
            elif turn is not None and self.rng.random() < 0.01 and hand.to_act is not None:
                made = self.run(Leave(seat=hand.to_act), self.player(hand.to_act))
            elif turn is not None and turn.kind == "ante":
                seat = next(s for s, p in hand.players.items() if not p.posted and not p.folded)
                made = self.run(PostAnte(seat=seat, entropy=self.rng.randbytes(16).hex()), self.player(seat))
            else:
                assert turn is not None
                made = self.answer(turn)
            turn = _turn(made, turn)

    def answer(self, turn: TurnStarted) -> list[Event]:
        command = choose(turn, self.rng)
        seat: int = command.seat  # type: ignore[attr-defined]
        try:
            return self.run(command, self.player(seat))
        except DomainError as refused:
            assert refused.code == MUST_SHOW
            return self.run(Show(seat=seat), self.player(seat))

    def deal(self) -> list[Event]:
        """A live dealer's console: the street's cards from a fresh shuffle; now and then
        a 7th card comes face up (R28)."""
        hand = self.table.hand
        game = self.table.game
        assert hand is not None and game is not None
        seen = {c for p in hand.players.values() for c in p.cards} | set(hand.community)
        deck = [c for c in range(52) if c not in seen]
        self.rng.shuffle(deck)
        street = hand.street + 1
        live = hand.live() if street else hand.dealt()
        count = len(live) * len(game.streets[street].faces)
        cards = [f"{'23456789TJQKA'[c >> 2]}{'cdhs'[c & 3]}" for c in deck[:count]]
        down = street == game.last_street and not game.streets[street].faces[0]
        exposed = [live[0].seat] if down and self.rng.random() < 0.3 else []
        return self.run(DealStreet(cards=cards, exposed=exposed), FLOOR)

    def play(self, hands: int) -> list[Event]:
        for _ in range(hands):
            self.between_hands()
            if len(self.table.ready_seats()) >= 2:
                self.hand()
        return self.events


def _turn(made: list[Event], turn: TurnStarted | None) -> TurnStarted | None:
    return next((e for e in reversed(made) if isinstance(e, TurnStarted)), turn)


def room(tables: int, *, hands: int = 0, events: int = 0, seed: int = 1) -> dict[str, list[Event]]:
    """The streams of ``tables`` played tables (the three games, 2..10 seats, every
    fourth a live dealer's) once ``hands`` hands or ``events`` events are played."""
    playing = [PlayedTable(f"bench-{i}", GAMES[i % 3], 2 + 2 * (i % 5), seed + i, live_dealer=i % 4 == 3)
               for i in range(tables)]
    played = 0
    while True:
        for table in playing:
            table.play(1)
            played += 1
            stored = sum(len(t.events) for t in playing)
            if (hands and played >= hands) or (events and stored >= events):
                return {str(t.table.table_id): t.events for t in playing}


def verify_rates(streams: dict[str, list[Event]]) -> dict[str, float]:
    from studroom.services.disputes.checks import check_table

    finished = {t: [s for s in spans(events) if s.end is not None] for t, events in streams.items()}
    hands = sum(len(s) for s in finished.values())
    started = time.perf_counter()
    for events in streams.values():
        Table.replay(events)
    bare = time.perf_counter() - started
    started = time.perf_counter()
    different = sum(not check.consistent for t, events in streams.items() for check in check_table(events, finished[t]))
    checked = time.perf_counter() - started
    if different:
        raise AssertionError(f"{different} simulated hands do not verify")
    return {"hands": hands, "bare replay (Table.replay): hands/s": hands / bare,
            "verify (re-run every command + deck audit): hands/s": hands / checked}


def rebuild_rates(database_url: str, streams: dict[str, list[Event]]) -> dict[str, float]:
    from studroom.projections.history.projector import Projector

    from studroom.services.store.postgres import PostgresEventStore

    prefix = f"bench_{uuid.uuid4().hex[:8]}_"
    store_schema, history = f"{prefix}p0", f"{prefix}history"
    try:
        with PostgresEventStore(database_url, schema=store_schema) as store:
            for table_id, events in streams.items():
                for start in range(0, len(events), BATCH):
                    store.append([(table_id, start, events[start:start + BATCH])])
            total = store.max_notification_id()
            started = time.perf_counter()
            position = 0
            while notes := store.read_notifications(position + 1, BATCH):
                position = notes[-1].id
            bare = time.perf_counter() - started
        projector = Projector(database_url, [store_schema], history_schema=history, batch_size=BATCH)
        try:
            started = time.perf_counter()
            projected = projector.catch_up()
            rebuilt = time.perf_counter() - started
        finally:
            projector.close()
        assert projected == total, (projected, total)
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            for name in (store_schema, history):
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
    return {"events": total, "bare read of the notification log: events/s": total / bare,
            "history rebuild from zero: events/s": total / rebuilt}


def run(args: argparse.Namespace) -> int:
    print(f"verify: a simulated room of {args.tables} tables, {args.hands} hands")
    for name, value in verify_rates(room(args.tables, hands=args.hands)).items():
        print(f"  {name:55s} {value:12,.0f}")
    with bench_database() as (database_url, _):
        print(f"history rebuild: a simulated room of {args.tables} tables, {args.events} events")
        for name, value in rebuild_rates(database_url, room(args.tables, events=args.events)).items():
            print(f"  {name:55s} {value:12,.0f}")
    return 0
