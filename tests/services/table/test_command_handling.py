"""The table service's core (CommandHandler, StoreWorker) on the in-memory store: fast."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import msgspec
import pytest
from studroom.domain.authority import Sender
from studroom.domain.commands import Act, BuyIn, OpenTable, SitDown, SitOut, Timeout
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import ALREADY_OPEN, DUPLICATE_COMMAND, NOT_YOUR_TURN, SEAT_TAKEN
from studroom.domain.events import ChipsBought, HandStarted, PauseStarted, PlayerLeft, TableOpened, TurnStarted
from studroom.domain.table import Table
from studroom.services.wire import protocol
from studroom.services.table.command_handling import CommandHandler
from studroom.services.table.request_decoding import Submission, decode_request
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.store.port import VersionConflict
from studroom.services.store.layout import store_of_table
from studroom.services.table.partitions import spread
from studroom.services.wire.partitioning import fnv1a_32, partition_of
from studroom.services.table.worker import StoreWorker

CONFIG = TableConfig(game="seven_card_stud", stakes=Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40))
NOW = 1_764_601_234_567          # the clock of the commands (their ids are microseconds near it)


class CountingStore:
    """An in-memory store that counts (and can slow down or fail) appends."""

    def __init__(self, delay: float = 0.0) -> None:
        self.inner = InMemoryEventStore()
        self.appends: list[list[tuple[str, int, int]]] = []   # per append: (stream, expected, n events)
        self.delay = delay
        self.fail_next: Exception | None = None
        self.before_append: Any = None
        self.loop_threads: set[int] = set()                   # threads that awaited an append
        self._lock = threading.Lock()

    def append(self, batch: Any, snapshots: Any = ()) -> None:
        if self.delay:
            time.sleep(self.delay)
        self._write(batch, snapshots)

    async def append_async(self, batch: Any, snapshots: Any = ()) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)          # a commit that takes a while, the loop free
        self.loop_threads.add(threading.get_ident())
        self._write(batch, snapshots)

    def _write(self, batch: Any, snapshots: Any) -> None:
        if self.before_append is not None:
            hook, self.before_append = self.before_append, None
            hook()
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        self.inner.append(batch, snapshots)
        with self._lock:
            self.appends.append([(s, e, len(ev)) for s, e, ev in batch])

    def load(self, stream_id: str, after_version: int = 0) -> list[Any]:
        return self.inner.load(stream_id, after_version)

    def load_latest(self, stream_ids: Any, format: str | None) -> Any:
        return self.inner.load_latest(stream_ids, format)

    def read_notifications(self, start: int, limit: int) -> list[Any]:
        return self.inner.read_notifications(start, limit)

    def max_notification_id(self) -> int:
        return self.inner.max_notification_id()


def clock() -> int:
    return NOW


def seeded() -> str:
    return "ab" * 32


def open_table(handler: CommandHandler, table_id: str, players: int = 2) -> None:
    assert handler.handle(table_id, OpenTable(table_id=table_id, config=CONFIG)).ok
    for seat in range(players):
        assert handler.handle(table_id, SitDown(seat=seat, player=f"{table_id}-p{seat}")).ok
        assert handler.handle(table_id, BuyIn(seat=seat, amount=1000)).ok


def replayed(store: Any, table_id: str) -> Table:
    return Table.replay(store.load(table_id))


def to_act(table: Table) -> int:
    assert table.hand is not None and table.hand.to_act is not None
    return table.hand.to_act


@pytest.fixture
def store() -> CountingStore:
    return CountingStore()


@pytest.fixture
def handler(store: CountingStore) -> CommandHandler:
    return CommandHandler(store, clock=clock, seed=seeded)


# ------------------------------------------------------------------ plain commands


def test_open_sit_buy_in_and_the_hand_starts_by_itself(store: CountingStore, handler: CommandHandler) -> None:
    reply = handler.handle("t1", OpenTable(table_id="t1", config=CONFIG))
    assert reply == protocol.Reply(ok=True, version=1)
    assert handler.handle("t1", SitDown(seat=0, player="ann")).version == 2
    assert handler.handle("t1", BuyIn(seat=0, amount=1000)).version == 3
    assert handler.handle("t1", SitDown(seat=1, player="bob")).version == 4
    assert replayed(store, "t1").hand is None                 # one player with chips: no hand
    reply = handler.handle("t1", BuyIn(seat=1, amount=1000))
    assert reply.ok
    events = store.load("t1")
    assert reply.version == len(events) > 5
    # the buy-in and the started hand are ONE append (one transaction)
    assert store.appends[-1] == [("t1", 4, len(events) - 4)]
    assert isinstance(events[4], ChipsBought) and isinstance(events[5], HandStarted)
    assert events[5].seed == "ab" * 32                       # handed in by the service
    table = replayed(store, "t1")
    assert table.hand is not None and table.hand.phase == "betting"
    turn = [e for e in events if isinstance(e, TurnStarted)][-1]
    assert turn.deadline_ms == NOW + CONFIG.action_seconds * 1000   # now_ms filled in
    assert handler.stats.hands_started == 1


def test_act_moves_the_hand_on(store: CountingStore, handler: CommandHandler) -> None:
    open_table(handler, "t1")
    table = replayed(store, "t1")
    reply = handler.handle("t1", Act(seat=to_act(table), action="bring_in"))
    assert reply.ok and reply.version == table.version + len(store.load("t1", table.version))
    assert replayed(store, "t1").hand.to_act != table.hand.to_act


def test_R18_the_service_clock_dates_every_command_whatever_the_body_says(
        store: CountingStore, handler: CommandHandler) -> None:
    open_table(handler, "t1")
    table = replayed(store, "t1")
    seat = to_act(table)
    player = Sender("player", table.seats[seat].player)
    assert handler.handle("t1", Act(seat=seat, action="bring_in", now_ms=1, command_id="1"), player).ok
    turn = [e for e in store.load("t1") if isinstance(e, TurnStarted)][-1]
    assert turn.deadline_ms == NOW + CONFIG.action_seconds * 1000


def test_hands_follow_each_other_in_the_same_append(store: CountingStore, handler: CommandHandler) -> None:
    open_table(handler, "t1")
    table = replayed(store, "t1")
    folder = to_act(table)
    handler.handle("t1", Act(seat=folder, action="bring_in"))
    table = replayed(store, "t1")
    reply = handler.handle("t1", Act(seat=to_act(table), action="fold"))
    assert reply.ok
    last = store.load("t1", table.version)
    kinds = [type(e).__name__ for e in last]
    assert "HandEnded" in kinds and kinds.index("HandStarted") > kinds.index("HandEnded")
    assert len(store.appends[-1]) == 1
    assert replayed(store, "t1").hand_no == 1 and replayed(store, "t1").hand is not None


def test_R5_R20_a_pause_between_hands_is_a_stored_turn_the_timer_ends(store: CountingStore) -> None:
    handler = CommandHandler(store, clock=clock, seed=seeded, pause_ms=500)
    handler.handle("t1", OpenTable(table_id="t1", config=CONFIG))
    for seat in range(2):
        handler.handle("t1", SitDown(seat=seat, player=f"p{seat}"))
    handler.handle("t1", BuyIn(seat=0, amount=500))
    assert handler.handle("t1", BuyIn(seat=1, amount=500)).ok
    pause = store.load("t1")[-1]
    assert pause == PauseStarted(turn=1, deadline_ms=NOW + 500, pause_ms=500)   # same append as the BuyIn
    assert replayed(store, "t1").hand is None and handler.stats.pauses == 1
    timer = Sender("service", "timer")
    assert handler.handle("t1", Timeout(turn=1, command_id="7"), timer).ok
    kinds = [type(e).__name__ for e in store.load("t1")]
    assert kinds[kinds.index("PauseStarted") + 1:][:2] == ["PauseEnded", "HandStarted"]
    assert len(store.appends[-1]) == 1                         # the Timeout's append starts the hand
    assert replayed(store, "t1").hand is not None and handler.stats.hands_started == 1


def test_R34_an_idle_table_with_a_sat_out_player_pauses_until_the_limit_and_then_removes_him(
        store: CountingStore) -> None:
    """The service deals nothing while only one player is not sat out, but opens the
    table's sit-out pause; the timer's Timeout at its end removes the player (cashed out)."""
    now = [NOW]
    handler = CommandHandler(store, clock=lambda: now[0], seed=seeded)
    handler.handle("t1", OpenTable(table_id="t1", config=CONFIG))
    for seat in range(2):
        handler.handle("t1", SitDown(seat=seat, player=f"p{seat}"))
    assert handler.handle("t1", SitOut(seat=1, command_id="1"), Sender("player", "p1")).ok
    pause = store.load("t1")[-1]                             # in the SitOut's append
    handler.handle("t1", BuyIn(seat=0, amount=500))
    assert handler.handle("t1", BuyIn(seat=1, amount=500)).ok
    limit_ms = CONFIG.sit_out_seconds * 1000
    assert pause == PauseStarted(turn=1, deadline_ms=NOW + limit_ms, pause_ms=limit_ms, purpose="sit_out_limit")
    assert replayed(store, "t1").hand is None
    now[0] = NOW + limit_ms
    assert handler.handle("t1", Timeout(turn=1, command_id="7"), Sender("service", "timer")).ok
    left = [e for e in store.load("t1") if isinstance(e, PlayerLeft)]
    assert [(e.player, e.cashed_out, e.reason) for e in left] == [("p1", 500, "sat_out_too_long")]
    assert replayed(store, "t1").hand is None and 1 not in replayed(store, "t1").seats


def test_R5_next_hand_due_on_tables_replayed_from_the_store(store: CountingStore) -> None:
    handler = CommandHandler(store, clock=clock, seed=seeded, auto_start=False)
    open_table(handler, "t1")
    table = replayed(store, "t1")
    assert table.next_hand_due()
    handler.handle("t1", SitOut(seat=1))
    assert not replayed(store, "t1").next_hand_due()
    live = TableConfig(game="seven_card_stud", stakes=CONFIG.stakes, auto_deal=False)
    handler.handle("t2", OpenTable(table_id="t2", config=live))
    for seat in range(2):
        handler.handle("t2", SitDown(seat=seat, player=f"p{seat}"))
        handler.handle("t2", BuyIn(seat=seat, amount=500))
    assert not replayed(store, "t2").next_hand_due()      # a live dealer's table


# ------------------------------------------------------------------ refusals


def refused(reply: protocol.Reply) -> str:
    assert not reply.ok and reply.error is not None
    return reply.error.code


def test_errors_have_clear_codes_and_change_nothing(store: CountingStore, handler: CommandHandler) -> None:
    open_table(handler, "t1")
    table = replayed(store, "t1")
    length = store.max_notification_id()
    appends = len(store.appends)
    wrong = next(s for s in table.hand.players if s != to_act(table))
    assert refused(handler.handle("t1", Act(seat=wrong, action="call"))) == NOT_YOUR_TURN
    assert refused(handler.handle("nope", Act(seat=0, action="call"))) == protocol.UNKNOWN_TABLE
    assert refused(handler.handle("t1", b"{not json")) == protocol.BAD_REQUEST
    assert refused(handler.handle("t1", b'{"type": "Dance", "seat": 1}')) == protocol.BAD_REQUEST
    assert refused(handler.handle("t1", b'{"type": "Act", "seat": "x", "action": "call"}')) == protocol.BAD_REQUEST
    assert refused(handler.handle("bad.id", b'{"type": "Act", "seat": 1, "action": "call"}')) == protocol.BAD_REQUEST
    other = protocol.encode_command(OpenTable(table_id="t9", config=CONFIG))
    assert refused(handler.handle("t1", other)) == protocol.BAD_REQUEST          # names another table
    assert refused(handler.handle("t1", OpenTable(table_id="t1", config=CONFIG))) == ALREADY_OPEN
    assert store.max_notification_id() == length and len(store.appends) == appends
    assert "nope" not in handler.cache                                    # unknown: not cached
    # a command id carried out once is refused when replayed
    seat = to_act(table)
    player = Sender("player", table.seats[seat].player)
    act = Act(seat=seat, action="bring_in", command_id="1764601234567890")
    assert handler.handle("t1", act, player).ok
    length = store.max_notification_id()
    assert refused(handler.handle("t1", act, player)) == DUPLICATE_COMMAND
    assert refused(handler.handle("t1", protocol.encode_command(act), player)) == DUPLICATE_COMMAND
    assert store.max_notification_id() == length
    assert handler.stats.refused == 10


def test_decode_request_reads_the_wire_format() -> None:
    act = Act(seat=2, action="call", command_id="x")
    assert decode_request("t1", protocol.encode_command(act)) == act


def test_unexpected_exception_answers_internal_and_drops_the_table(
    store: CountingStore, handler: CommandHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_table(handler, "t1")
    assert "t1" in handler.cache
    table = replayed(store, "t1")
    length = store.max_notification_id()

    def boom(self: Table, command: Any) -> list[Any]:
        raise RuntimeError("a bug")

    with monkeypatch.context() as m:
        m.setattr(Table, "execute", boom)
        assert refused(handler.handle("t1", Act(seat=to_act(table), action="bring_in"))) == protocol.INTERNAL
    assert "t1" not in handler.cache and store.max_notification_id() == length
    assert handler.handle("t1", Act(seat=to_act(table), action="bring_in")).ok   # reloaded, fine
    # the store failing: internal, nothing cached that the store does not have
    store.fail_next = RuntimeError("database down")
    table = replayed(store, "t1")
    assert refused(handler.handle("t1", Act(seat=to_act(table), action="call"))) == protocol.INTERNAL
    assert "t1" not in handler.cache
    assert handler.handle("t1", Act(seat=to_act(table), action="call")).ok


# ------------------------------------------------------------------ two writers


def test_a_stale_writer_reloads_and_retries(store: CountingStore) -> None:
    a = CommandHandler(store, clock=clock, seed=seeded)
    b = CommandHandler(store, clock=clock, seed=seeded)
    open_table(a, "t1")
    table = replayed(store, "t1")
    b.handle("t1", SitDown(seat=5, player="late"))          # b caches the table, writes
    assert a.handle("t1", SitDown(seat=6, player="later")).ok   # a was stale: conflict, retried
    assert a.stats.conflicts == 1
    assert sorted(replayed(store, "t1").seats) == [0, 1, 5, 6]
    # a refusal decided on a stale cache is checked against the store first
    first = to_act(table)
    assert b.handle("t1", Act(seat=first, action="bring_in")).ok
    now = replayed(store, "t1")
    assert a.handle("t1", Act(seat=to_act(now), action="call")).ok    # a thought: not your turn
    assert len(store.load("t1")) == replayed(store, "t1").version


def test_conflict_twice_answers_conflict(store: CountingStore) -> None:
    a = CommandHandler(store, clock=clock, seed=seeded)
    b = CommandHandler(store, clock=clock, seed=seeded)
    open_table(a, "t1")
    b.handle("t1", SitDown(seat=5, player="x"))
    writes = iter(range(100))

    def sneak_in() -> None:           # another writer gets in before every append
        b.handle("t1", SitOut(seat=5, sitting_out=next(writes) % 2 == 0))
        store.before_append = sneak_in

    store.before_append = sneak_in
    length = store.max_notification_id()
    assert refused(a.handle("t1", SitDown(seat=6, player="y"))) == protocol.CONFLICT
    store.before_append = None
    assert 6 not in replayed(store, "t1").seats
    assert store.max_notification_id() > length      # only the other writer's events


# ------------------------------------------------------------------ group commit


def test_a_batch_of_tables_is_one_append(store: CountingStore, handler: CommandHandler) -> None:
    tables = [f"t{k}" for k in range(6)]
    for t in tables:
        open_table(handler, t)
    before = len(store.appends)
    items: list[Submission] = []
    for t in tables:
        items.append(Submission(t, Act(seat=to_act(replayed(store, t)), action="bring_in")))
    items.append(Submission("t0", b"garbage"))                         # refusals ride along
    items.append(Submission("ghost", Act(seat=0, action="fold")))
    outcomes = handler.handle_batch(items)
    assert [o.reply.ok for o in outcomes] == [True] * 6 + [False, False]
    assert len(store.appends) == before + 1
    assert sorted(s for s, _, _ in store.appends[-1]) == tables
    for t, outcome in zip(tables, outcomes):
        assert outcome.reply.version == replayed(store, t).version
    assert handler.stats.batch_sizes.get(6) == 1


def test_commands_of_one_table_in_a_batch_run_in_order(store: CountingStore, handler: CommandHandler) -> None:
    handler.handle("t1", OpenTable(table_id="t1", config=CONFIG))
    outcomes = handler.handle_batch([
        Submission("t1", SitDown(seat=0, player="a")), Submission("t1", SitDown(seat=0, player="b")),
        Submission("t1", SitDown(seat=1, player="b")),
    ])
    assert [o.reply.ok for o in outcomes] == [True, False, True]
    assert [o.reply.version for o in outcomes] == [2, None, 3]
    assert store.appends[-1] == [("t1", 1, 2)]


def test_a_conflict_in_a_batch_retries_each_command_alone(store: CountingStore) -> None:
    a = CommandHandler(store, clock=clock, seed=seeded)
    b = CommandHandler(store, clock=clock, seed=seeded)
    for t in ("t1", "t2", "t3"):
        open_table(a, t)
    b.handle("t2", SitDown(seat=5, player="x"))            # a's t2 is stale now
    before = len(store.appends)
    outcomes = a.handle_batch([Submission(t, SitDown(seat=7, player=f"{t}-7")) for t in ("t1", "t2", "t3")])
    assert all(o.reply.ok for o in outcomes)
    assert a.stats.conflicts == 1
    assert [len(x) for x in store.appends[before:]] == [1, 1, 1]   # retried one by one
    assert sorted(replayed(store, "t2").seats) == [0, 1, 5, 7]


def test_the_worker_groups_concurrent_commands_and_serialises_a_table() -> None:
    store = CountingStore()
    handler = CommandHandler(store, clock=clock, seed=seeded)
    tables = [f"t{k}" for k in range(8)]
    for t in tables:
        open_table(handler, t)
    before = len(store.appends)
    store.delay = 0.02                               # a commit takes a while

    async def main() -> list[protocol.Reply]:
        worker = StoreWorker(handler)
        worker.start()
        futures = []
        for t in tables:
            futures.append(worker.submit(t, 0, SitDown(seat=3, player=f"{t}-a")))
            futures.append(worker.submit(t, 0, SitDown(seat=3, player=f"{t}-b")))   # same seat: after a
            futures.append(worker.submit(t, 0, SitDown(seat=4, player=f"{t}-b")))
        replies = list(await asyncio.gather(*futures))
        assert worker.stats.largest_batch == len(tables)
        await worker.close()
        return replies

    replies = asyncio.run(main())
    assert [r.ok for r in replies] == [True, False, True] * len(tables)
    assert [r.error.code for r in replies if not r.ok] == [SEAT_TAKEN] * len(tables)
    assert len(store.appends) - before <= 4          # 16 writes, about 2 commits
    for t in tables:
        assert replayed(store, t).seats[3].player == f"{t}-a"


def test_the_worker_awaits_the_append_in_its_loop_with_the_same_rules(store: CountingStore) -> None:
    """No worker thread: the append is awaited in the service's loop; a failed append
    and a conflict are answered as by the blocking path."""
    a = CommandHandler(store, clock=clock, seed=seeded)
    b = CommandHandler(store, clock=clock, seed=seeded)
    for t in ("t1", "t2"):
        open_table(a, t)

    async def main() -> list[protocol.Reply]:
        worker = StoreWorker(a)
        worker.start()
        replies = [await worker.submit("t1", 0, SitDown(seat=4, player="w"))]      # type: ignore[misc]
        store.fail_next = RuntimeError("database down")
        replies.append(await worker.submit("t1", 0, SitDown(seat=5, player="x")))  # type: ignore[misc]
        b.handle("t2", SitDown(seat=5, player="y"))                                # a's t2 is stale now
        replies.append(await worker.submit("t2", 0, SitDown(seat=6, player="z")))  # type: ignore[misc]
        await worker.close()
        assert store.loop_threads == {threading.get_ident()}
        return replies

    ok, failed, retried = asyncio.run(main())
    assert ok.ok and refused(failed) == protocol.INTERNAL and retried.ok
    assert "t1" not in a.cache and 5 not in replayed(store, "t1").seats           # nothing half-applied
    assert a.stats.conflicts == 1 and sorted(replayed(store, "t2").seats) == [0, 1, 5, 6]


# ------------------------------------------------------------------ partitions


def test_partition_of_is_fnv1a_like_the_nats_server() -> None:
    assert fnv1a_32(b"") == 0x811C9DC5
    assert fnv1a_32(b"a") == 0xE40C292C                      # the published FNV-1a vector
    assert partition_of("table-0") == fnv1a_32(b"table-0") % 16
    assert {partition_of(f"t{k}") for k in range(200)} == set(range(16))
    assert store_of_table("t7", 1) == 0
    assert spread([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def test_version_conflict_is_the_store_port() -> None:
    s = InMemoryEventStore()
    s.append([("x", 0, [TableOpened(table_id="x", config=CONFIG)])])
    with pytest.raises(VersionConflict):
        s.append([("x", 0, [TableOpened(table_id="x", config=CONFIG)])])
    assert msgspec.json.decode(protocol.ok(3)) == {"ok": True, "version": 3}
