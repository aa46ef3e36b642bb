"""Tables past the cache load from their snapshot and the events after it
(services/table/loading.py), and play on exactly as if replayed in full."""

from __future__ import annotations

import logging
import random

import pytest
from studroom.domain import snapshot
from studroom.domain.commands import (
    BuyIn,
    Command,
    OpenTable,
    PostAnte,
    Show,
    SitDown,
    SitOut,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import MUST_SHOW
from studroom.domain.simulate import choose
from studroom.domain.table import Table
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.store.port import Snapshot
from studroom.services.table.command_handling import CommandHandler
from studroom.services.table.request_decoding import Submission
from studroom.services.table.loading import load_table

CONFIG = TableConfig(game="seven_card_stud", stakes=Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40))
EVERY = 10
STACK = 4000


def _move(table: Table, rng: random.Random) -> Command:
    turn, hand = table.last_turn, table.hand
    for seat, state in table.seats.items():
        if state.stack == 0 and (hand is None or seat not in hand.players):
            return BuyIn(seat=seat, amount=STACK)
    assert turn is not None and hand is not None
    if turn.kind == "ante":
        return PostAnte(seat=next(s for s, p in hand.players.items() if not p.posted and not p.folded))
    return choose(turn, rng)


def _step(handler: CommandHandler, store: InMemoryEventStore, table_id: str, rng: random.Random,
          mirrors: dict[str, Table]) -> None:
    """One random legal move, as a client following the table in the store would."""
    mirror = mirrors.setdefault(table_id, Table())
    for event in store.load(table_id, mirror.version):
        mirror.apply(event)
    command = _move(mirror, rng)
    reply = handler.handle(table_id, command)
    if not reply.ok and reply.error is not None and reply.error.code == MUST_SHOW:
        reply = handler.handle(table_id, Show(seat=command.seat))  # type: ignore[attr-defined]
    assert reply.ok, reply.error


def _play(handler: CommandHandler, store: InMemoryEventStore, tables: list[str], moves: int) -> None:
    """Open the tables, then ``moves`` random legal moves on each in turn (every one a
    cache miss when the cache holds fewer tables)."""
    rng, mirrors = random.Random(3), {}
    for t in tables:
        assert handler.handle(t, OpenTable(table_id=t, config=CONFIG)).ok
        for seat in range(3):
            assert handler.handle(t, SitDown(seat=seat, player=f"{t}p{seat}")).ok
            assert handler.handle(t, BuyIn(seat=seat, amount=STACK)).ok
    for _ in range(moves):
        for t in tables:
            _step(handler, store, t, rng, mirrors)


def test_past_the_cache_every_load_applies_a_bounded_tail() -> None:
    store = InMemoryEventStore()
    handler = CommandHandler(store, cache_size=1, snapshot_every=EVERY)
    tables = ["a", "b"]
    _play(handler, store, tables, 100)
    events = sum(len(store.load(t)) for t in tables)
    assert events > 20 * EVERY and handler.stats.loads >= 200   # every command a load
    assert handler.stats.snapshots >= events // (2 * EVERY)
    # a load applies less than EVERY events plus one command's (the largest batch)
    largest = max(len(store.load(t, v)) - len(store.load(t, v + 1)) for t in tables for v in range(5))
    assert handler.stats.replayed / handler.stats.loads < EVERY + largest
    for t in tables:
        loaded = load_table(store, t)
        assert loaded.replayed < 2 * EVERY
        assert loaded.table.state() == Table.replay(store.load(t)).state()
        assert snapshot.capture(loaded.table) == snapshot.capture(Table.replay(store.load(t)))
    # the notification log holds the events and nothing else
    assert store.max_notification_id() == events
    assert all(type(n.event).__module__ == "studroom.domain.events" for n in store.read_notifications(1, events))


def test_a_snapshot_of_another_format_is_ignored_and_rebuilt(caplog: pytest.LogCaptureFixture) -> None:
    store = InMemoryEventStore()
    writer = CommandHandler(store, snapshot_every=0)       # no snapshots at all
    _play(writer, store, ["t"], 30)
    assert store.load_latest(["t"], snapshot.FORMAT)["t"].snapshot is None
    length = len(store.load("t"))
    assert length >= EVERY
    # a snapshot of an older domain, and a broken one of this format: both replayed over
    store.append([], [Snapshot("t", length, "table-v0-old", b"{}")])
    assert load_table(store, "t").replayed == length
    store.append([], [Snapshot("t", length, snapshot.FORMAT, b"garbage")])
    with caplog.at_level(logging.WARNING):
        assert load_table(store, "t").replayed == length
    assert "does not restore" in caplog.text
    # a handler that snapshots stores one with the table's next command (its load replayed EVERY or more)
    handler = CommandHandler(store, cache_size=1, snapshot_every=EVERY)
    _step(handler, store, "t", random.Random(9), {})
    stored = store.load_latest(["t"], snapshot.FORMAT)["t"].snapshot
    assert stored is not None and stored.version == len(store.load("t"))
    assert load_table(store, "t").replayed == 0


def test_the_uncached_tables_of_a_batch_load_in_one_read() -> None:
    class Counting(InMemoryEventStore):
        reads = 0

        def load_latest(self, stream_ids, format):
            self.reads += 1
            return super().load_latest(stream_ids, format)

    store = Counting()
    tables = [f"t{k}" for k in range(5)]
    _play(CommandHandler(store, snapshot_every=EVERY), store, tables, 3)
    handler = CommandHandler(store, cache_size=2, snapshot_every=EVERY)
    store.reads = 0
    replies = handler.handle_batch([Submission(t, SitOut(seat=0, sitting_out=True)) for t in tables])
    assert [r.reply.ok for r in replies] == [True] * 5
    assert store.reads == 1 and handler.stats.loads == 5
    assert all(replayed_table(store, t).seats[0].sitting_out for t in tables)


def replayed_table(store: InMemoryEventStore, table_id: str) -> Table:
    return Table.replay(store.load(table_id))
