"""The timer service against the real table service and relay, on real servers.

The module runs its own embedded NATS (so that no other test's tables reach these
durable consumers, and none of ours reach theirs), the session's PostgreSQL with a
fresh store schema, and one table service and one relay in a background thread for
all its tests.  Tables have one-second clocks.  A seat that never acts (the
"sleeper") is timed out by the timer service; the other seats are driven by
:class:`Drivers` (always the most aggressive legal action, then show).  Drivers and
sleeper sit out as soon as a hand starts, so each table plays exactly one hand.

* a sleeper is timed out on time under both policies (R19), the hand finishes and the
  chips are conserved (replayed from the store);
* the timer service as a subprocess is killed with SIGKILL while ten tables wait on
  deadlines and restarted after they passed: every turn of every sleeper has exactly
  one ``TimedOut`` (counted in the store), never two;
* a timeout arriving after the player acted is refused ``stale_timeout`` and changes
  nothing, sent directly and through the timer path (a late schedule).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest
from studroom.domain.commands import (
    Act,
    BuyIn,
    Muck,
    OpenTable,
    Show,
    SitDown,
    SitOut,
    Timeout,
)
from studroom.domain import errors
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.events import (
    Event,
    HandEnded,
    HandStarted,
    TableEvent,
    TimedOut,
    TurnStarted,
)
from studroom.domain.table import Table
from studroom.projections.ledger.conservation import check_table
from studroom.services.players.client import TableClient
from studroom.services.runtime.embedded_nats import EmbeddedNats
from studroom.services.runtime.settings import (
    DATA_DIR_VAR,
    DATABASE_URL_VAR,
    NATS_URL_VAR,
    Settings,
)
from studroom.services.store.codec import register_event_types
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.timer.bootstrap import serve_timer
from studroom.services.timer.schedule import TimerPayload, schedule_headers
from studroom.services.timer.service import TimerStats
from studroom.services.wire import subjects

pytestmark = pytest.mark.integration

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
SLEEPER = 0
PREFERENCE = ("raise", "bet", "complete", "call", "check", "bring_in", "fold")
_decode = msgspec.json.Decoder(TableEvent).decode


# ------------------------------------------------------------------------ the stack


class Stack:
    """One table service and one relay, in a thread of their own (asyncio loop)."""

    def __init__(self, settings: Settings, prefix: str, lease_bucket: str) -> None:
        self.settings = settings
        self.prefix = prefix
        self.schema = f"{prefix}0"
        self.lease_bucket = lease_bucket
        self.nats_server: EmbeddedNats | None = None
        self.stop_event: asyncio.Event | None = None
        self.failed: BaseException | None = None

    def _run(self) -> None:
        from studroom.services.relay.bootstrap import serve_relay
        from studroom.services.table.bootstrap import serve_table

        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self.stop_event = asyncio.Event()
            table = asyncio.create_task(serve_table(
                self.settings, instance_id="timer-it", stores=1, schema_prefix=self.prefix,
                lease_bucket=self.lease_bucket, stop=self.stop_event,
                on_ready=lambda _service: self.ready.set()))
            relay = asyncio.create_task(serve_relay(
                self.settings, store_schemas=[self.schema], stop=self.stop_event))
            done, _ = await asyncio.wait({table, relay}, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if task.exception() is not None:
                    self.failed = task.exception()
                    self.ready.set()
                    self.stop_event.set()
            await asyncio.gather(table, relay, return_exceptions=True)

        try:
            self.loop.run_until_complete(main())
        except BaseException as e:  # noqa: BLE001
            self.failed = e
            self.ready.set()

    def start(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.stop_event = None
        self.ready = threading.Event()
        self.failed = None
        self.thread = threading.Thread(target=self._run, name="timer-test-stack", daemon=True)
        self.thread.start()
        assert self.ready.wait(60), "table service not ready"
        if self.failed is not None:
            raise self.failed

    def stop(self) -> None:
        if self.stop_event is not None:
            self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(30)
        self.loop.close()

    def events(self, table_id: str) -> list[Event]:
        register_event_types(TableEvent)
        store = PostgresEventStore(self.settings.database_url, schema=self.schema, pool_size=1,
                                   max_overflow=0)
        try:
            return store.load(table_id)
        finally:
            store.close()


@pytest.fixture(scope="module")
def stack(database_url: str) -> Iterator[Stack]:
    folder = Path(tempfile.mkdtemp(prefix="studroom-it-timer-"))
    run = uuid.uuid4().hex[:6]
    with EmbeddedNats(folder, auth=False) as server:
        settings = Settings(nats_url=server.url, database_url=database_url, data_dir=folder)
        stack = Stack(settings, prefix=f"ittimer_{run}_p", lease_bucket=f"ittimer_{run}_leases")
        stack.nats_server = server
        stack.start()
        try:
            yield stack
        finally:
            stack.stop()
    shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------------ the drivers


class Drivers:
    """Plays every seat but the sleeper at some tables; records what the tables say."""

    def __init__(self, nc: Any, players: int) -> None:
        self.nc = nc
        self.client = TableClient(nc)
        self.players = players
        self.seen: dict[str, list[tuple[float, Event]]] = defaultdict(list)   # wall ms, event
        self.ended: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.refusals: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._sat_out: set[str] = set()

    async def open(self, table_id: str, config: TableConfig) -> None:
        await self.nc.subscribe(subjects.public_events(table_id), cb=self._on_public)
        await self.nc.flush()
        await self._must(table_id, OpenTable(table_id=table_id, config=config))
        for seat in range(self.players):
            await self._must(table_id, SitDown(seat=seat, player=f"{table_id}-p{seat}", auto_ante=True))
            await self._must(table_id, BuyIn(seat=seat, amount=40 * STAKES.small_bet))

    async def _must(self, table_id: str, command: Any) -> None:
        reply = await self.client.send(table_id, command, timeout=5.0)
        assert reply.ok, f"{table_id}: {command} refused: {reply.error}"

    async def _on_public(self, msg: Any) -> None:
        table_id = msg.subject.rsplit(".", 1)[1]
        event = _decode(msg.data)
        self.seen[table_id].append((time.time() * 1000, event))
        if isinstance(event, HandStarted) and table_id not in self._sat_out:
            self._sat_out.add(table_id)            # one hand per table: everyone sits out next
            for seat in (s.seat for s in event.seats):   # a late sitter alone starts no hand
                self._spawn(self._send(table_id, SitOut(seat=seat, sitting_out=True)))
        elif isinstance(event, HandEnded):
            self.ended[table_id].set()
        elif isinstance(event, TurnStarted) and event.seat not in (None, SLEEPER):
            if event.kind == "show":
                command: Any = Show(seat=event.seat, command_id=f"d{event.turn}")
            elif event.kind == "act":
                action = next(a for a in PREFERENCE if a in event.options)
                command = Act(seat=event.seat, action=action, command_id=f"d{event.turn}")
            else:
                return
            self._spawn(self._send(table_id, command))

    async def _send(self, table_id: str, command: Any) -> None:
        reply = await self.client.send(table_id, command, timeout=5.0)
        if not reply.ok and reply.error is not None:
            if reply.error.code == errors.MUST_SHOW and isinstance(command, Muck):
                return
            self.refusals.append(f"{table_id} {type(command).__name__}: {reply.error.code}")

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait_ended(self, table_ids: list[str], timeout: float) -> None:
        await asyncio.wait_for(asyncio.gather(*(self.ended[t].wait() for t in table_ids)), timeout)
        await asyncio.sleep(0.3)                   # the SitOuts' and last events' replies

    async def sleeper_waiting(self, table_id: str) -> TurnStarted | None:
        """The sleeper's turn if it is the table's open turn."""
        turns = [e for _, e in self.seen[table_id] if isinstance(e, TurnStarted)]
        ended = any(isinstance(e, HandEnded) for _, e in self.seen[table_id])
        if turns and not ended and turns[-1].seat == SLEEPER and turns[-1].kind != "ante":
            last_turn = turns[-1].turn
            if not any(isinstance(e, TimedOut) and e.turn == last_turn for _, e in self.seen[table_id]):
                return turns[-1]
        return None


async def armed_deadlines(js: Any, drivers: Any, ids: list[str], wait: float = 20.0) -> dict[str, int]:
    """The deadline of each table whose sleeper's turn is open and whose timer the
    service has scheduled (waits up to ``wait`` seconds for all of them)."""
    deadline = time.monotonic() + wait
    armed: dict[str, int] = {}
    while len(armed) < len(ids) and time.monotonic() < deadline:
        for table_id in set(ids) - set(armed):
            turn = await drivers.sleeper_waiting(table_id)
            if turn is None:
                continue
            with contextlib.suppress(Exception):
                pending = await js.get_last_msg(subjects.TIMER_STREAM, subjects.timer_schedule(table_id))
                if msgspec.json.decode(pending.data)["turn"] == turn.turn:
                    armed[table_id] = turn.deadline_ms
        await asyncio.sleep(0.05)
    return armed


def every_table_finished_with_one_timeout_per_turn(stack: Any, ids: list[str], drivers: Any) -> None:
    assert not drivers.refusals, drivers.refusals
    for table_id in ids:
        events = stack.events(table_id)
        assert any(isinstance(e, HandEnded) for e in events), f"{table_id}: no hand ended"
        exactly_one_timeout_per_sleeper_turn(table_id, events)
        chips_conserved(table_id, events)


def config(policy: str = "all_in_protection", seconds: int = 1) -> TableConfig:
    return TableConfig(game="seven_card_stud", stakes=STAKES, action_seconds=seconds,
                       ante_seconds=seconds, showdown_seconds=seconds, timeout_policy=policy)


# ------------------------------------------------------------------------- checks


def chips_conserved(table_id: str, events: list[Event]) -> None:
    """A finished hand, and every chip bought in is on a seat, raked or cashed out."""
    check = check_table(table_id, events)
    assert Table.replay(events).hand is None, f"{table_id}: a hand is still running"
    assert check.conserved, check.bad


def exactly_one_timeout_per_sleeper_turn(table_id: str, events: list[Event]) -> Counter[int]:
    """Every turn of the sleeper ended with exactly one TimedOut; nobody else timed out."""
    sleeper_turns = {e.turn for e in events if isinstance(e, TurnStarted) and e.seat == SLEEPER
                     and e.kind in ("act", "show")}
    timeouts = Counter(e.turn for e in events if isinstance(e, TimedOut))
    assert all(n == 1 for n in timeouts.values()), f"{table_id}: a turn timed out twice: {timeouts}"
    assert set(timeouts) == sleeper_turns, (
        f"{table_id}: sleeper turns {sorted(sleeper_turns)} but timeouts {sorted(timeouts)}")
    assert all(e.seat == SLEEPER for e in events if isinstance(e, TimedOut))
    return timeouts


def lateness_ms(seen: list[tuple[float, Event]]) -> list[float]:
    """For each TimedOut the test saw: arrival (wall clock) minus its turn's deadline."""
    deadlines = {e.turn: e.deadline_ms for _, e in seen if isinstance(e, TurnStarted)}
    return [at - deadlines[e.turn] for at, e in seen if isinstance(e, TimedOut)]


async def run_timer(stack: Stack, stop: asyncio.Event, name: str) -> asyncio.Task[Any]:
    task = asyncio.create_task(serve_timer(
        Settings(nats_url=stack.settings.nats_url), instance_id=name, stop=stop, stats_every=0))
    await asyncio.sleep(0.2)
    return task


# -------------------------------------------------------------------------- tests


@pytest.mark.timeout(60)
@pytest.mark.parametrize("policy", ["all_in_protection", "check_or_fold"])
def test_R19_a_sleeping_player_is_timed_out_on_time_and_the_hand_finishes(stack: Stack, policy: str) -> None:
    run = uuid.uuid4().hex[:6]
    ids = [f"tmo{run}{k}" for k in range(3)]

    async def main() -> tuple[Drivers, TimerStats]:
        stop = asyncio.Event()
        timer = await run_timer(stack, stop, f"it-{policy[:5]}")
        nc = await nats.connect(stack.settings.nats_url)
        drivers = Drivers(nc, players=3)
        try:
            for table_id in ids:
                await drivers.open(table_id, config(policy))
            await drivers.wait_ended(ids, timeout=40)
        finally:
            stop.set()
            stats = await timer
            await nc.drain()
        return drivers, stats

    drivers, stats = asyncio.run(main())
    assert not drivers.refusals, drivers.refusals
    assert stats.timed_out >= len(ids), stats.line()
    assert not stats.errors, stats.line()
    for table_id in ids:
        events = stack.events(table_id)
        assert any(isinstance(e, HandEnded) for e in events), f"{table_id}: no hand ended"
        timeouts = exactly_one_timeout_per_sleeper_turn(table_id, events)
        assert timeouts, f"{table_id}: the sleeper never timed out"
        outcomes = [e.outcome for e in events if isinstance(e, TimedOut)]
        if policy == "check_or_fold":
            assert "protected" not in outcomes, outcomes
            assert "show" not in outcomes, outcomes        # he folded before any showdown
        elif "bring_in" in outcomes:
            # R19: once he has put in more than the ante he is never folded by a timeout.
            assert "fold" not in outcomes[outcomes.index("bring_in"):], outcomes
        chips_conserved(table_id, events)
        late = lateness_ms(drivers.seen[table_id])
        assert late and min(late) >= 0, f"{table_id}: a timeout came before its deadline: {late}"
        assert max(late) < 1500, f"{table_id}: a timeout came late: {late}"


@pytest.mark.timeout(60)
def test_two_instances_share_the_work_and_no_turn_times_out_twice(stack: Stack) -> None:
    """Horizontal scaling: two instances pull from the same durable consumers."""
    run = uuid.uuid4().hex[:6]
    ids = [f"tm2{run}{k}" for k in range(6)]

    async def main() -> list[TimerStats]:
        stop = asyncio.Event()
        timers = [await run_timer(stack, stop, f"it-pair-{k}") for k in range(2)]
        nc = await nats.connect(stack.settings.nats_url)
        drivers = Drivers(nc, players=3)
        try:
            for table_id in ids:
                await drivers.open(table_id, config())
            await drivers.wait_ended(ids, timeout=40)
        finally:
            stop.set()
            stats = [await timer for timer in timers]
            await nc.drain()
        assert not drivers.refusals, drivers.refusals
        return stats

    stats = asyncio.run(main())
    total = 0
    for table_id in ids:
        events = stack.events(table_id)
        total += sum(exactly_one_timeout_per_sleeper_turn(table_id, events).values())
        chips_conserved(table_id, events)
    assert sum(s.timed_out for s in stats) == total, [s.line() for s in stats]
    assert all(not s.errors for s in stats), [s.line() for s in stats]


def _spawn_timer(stack: Stack, log_path: Path, name: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env[NATS_URL_VAR] = stack.settings.nats_url or ""
    env[DATABASE_URL_VAR] = stack.settings.database_url or ""
    env[DATA_DIR_VAR] = str(stack.settings.data_dir)
    env["PYTHONUNBUFFERED"] = "1"
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "studroom.services.cli", "serve", "timer", "--instance-id", name,
             "--stats-every", "1"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.mark.timeout(90)
def test_sigkill_of_the_timer_service_loses_no_deadline_and_times_out_nothing_twice(stack: Stack) -> None:
    run = uuid.uuid4().hex[:6]
    ids = [f"tmk{run}{k}" for k in range(10)]
    log_path = Path(tempfile.mkdtemp(prefix="studroom-it-timer-logs-")) / "timer.log"

    async def main() -> Drivers:
        nc = await nats.connect(stack.settings.nats_url)
        js = nc.jetstream()
        drivers = Drivers(nc, players=2)
        proc = _spawn_timer(stack, log_path, "it-kill-1")
        try:
            for table_id in ids:
                await drivers.open(table_id, config(seconds=2))
            # Wait until every table waits on its sleeper and the timer holds his schedule.
            armed = await armed_deadlines(js, drivers, ids)
            assert len(armed) == len(ids), f"only {len(armed)} tables armed; log {log_path}"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            # Every armed deadline passes while no timer service runs.
            await asyncio.sleep(max(armed.values()) / 1000 - time.time() + 0.5)
            for table_id in ids:
                assert not any(isinstance(e, TimedOut) for _, e in drivers.seen[table_id]), (
                    f"{table_id} timed out while no timer service ran")
            restarted_ms = time.time() * 1000
            proc = _spawn_timer(stack, log_path, "it-kill-2")
            await drivers.wait_ended(ids, timeout=45)
            for table_id in ids:
                first = min(at for at, e in drivers.seen[table_id] if isinstance(e, TimedOut))
                assert first - restarted_ms < 6000, (
                    f"{table_id}: the overdue timeout came {first - restarted_ms:.0f} ms after the restart")
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
            await nc.drain()
        return drivers

    drivers = asyncio.run(main())
    every_table_finished_with_one_timeout_per_turn(stack, ids, drivers)
    assert "Traceback" not in log_path.read_text(errors="replace"), log_path.read_text()[-3000:]


@pytest.mark.timeout(60)
def test_R20_a_late_timeout_after_the_player_acted_is_refused_stale_and_changes_nothing(stack: Stack) -> None:
    table_id = f"tms{uuid.uuid4().hex[:6]}"

    async def main() -> None:
        stop = asyncio.Event()
        stats = TimerStats()
        timer = asyncio.create_task(serve_timer(
            Settings(nats_url=stack.settings.nats_url), instance_id="it-stale", stop=stop,
            stats_every=0, stats=stats))
        nc = await nats.connect(stack.settings.nats_url)
        js = nc.jetstream()
        client = TableClient(nc)
        drivers = Drivers(nc, players=2)
        try:
            # A sleeper timeout first (so a hand runs), then the other seat acts in time.
            await drivers.open(table_id, config(seconds=3))
            deadline = time.monotonic() + 20
            acted: TurnStarted | None = None
            while acted is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                turns = [e for _, e in drivers.seen[table_id] if isinstance(e, TurnStarted)]
                for turn in turns:
                    if turn.seat != SLEEPER and turn.kind == "act" and any(
                            isinstance(e, TurnStarted) and e.turn > turn.turn for e in turns):
                        acted = turn
                        break
            assert acted is not None, "the driver never acted"
            before = len(stack.events(table_id))
            # 1. Directly: the table refuses the turn that is over.
            reply = await client.send(table_id, Timeout(turn=acted.turn, seat=acted.seat), timeout=5)
            assert not reply.ok and reply.error is not None
            assert reply.error.code == errors.STALE_TIMEOUT, reply.error
            # 2. Through the timer path: a late schedule for that turn fires at once.
            stale_before = stats.stale
            payload = TimerPayload(table_id=table_id, turn=acted.turn,
                                   deadline_ms=acted.deadline_ms - 2000, seat=acted.seat)
            sched = subjects.timer_schedule(f"{table_id}x")      # another table's slot: the
            # table's own slot holds its live turn (replacing it would cancel that timer)
            await js.publish(sched, msgspec.json.encode(payload),
                             headers=schedule_headers(f"{table_id}x", payload.deadline_ms))
            wait_until = time.monotonic() + 5
            while stats.stale == stale_before and time.monotonic() < wait_until:
                await asyncio.sleep(0.05)
            assert stats.stale > stale_before, stats.line()
            after_events = stack.events(table_id)
            new = after_events[before:]
            assert not any(isinstance(e, TimedOut) and e.turn == acted.turn for e in new), new
            assert not any(isinstance(e, TimedOut) and e.seat == acted.seat for e in after_events)
            await drivers.wait_ended([table_id], timeout=30)
        finally:
            stop.set()
            await timer
            await nc.drain()
        events = stack.events(table_id)
        exactly_one_timeout_per_sleeper_turn(table_id, events)
        chips_conserved(table_id, events)
        assert not stats.errors, stats.line()

    asyncio.run(main())


@pytest.mark.timeout(30)
def test_timeouts_are_counted_per_table_in_the_kv_bucket(stack: Stack) -> None:
    """The lobby's view: every TimedOut of a table counted once in studroom_timeouts."""
    table_id = f"tmc{uuid.uuid4().hex[:6]}"

    async def main() -> None:
        stop = asyncio.Event()
        timer = await run_timer(stack, stop, "it-count")
        nc = await nats.connect(stack.settings.nats_url)
        drivers = Drivers(nc, players=2)
        try:
            await drivers.open(table_id, config())
            await drivers.wait_ended([table_id], timeout=25)
            n = sum(isinstance(e, TimedOut) for e in stack.events(table_id))
            kv = await nc.jetstream().key_value(subjects.TIMEOUTS_BUCKET)
            value: dict[str, Any] = {}
            for _ in range(40):
                with contextlib.suppress(Exception):
                    value = msgspec.json.decode((await kv.get(table_id)).value)
                if value.get("timeouts") == n:
                    break
                await asyncio.sleep(0.05)
            assert n >= 1 and value.get("timeouts") == n, (n, value)
            assert [r["turn"] for r in value["recent"]] == sorted(
                e.turn for e in stack.events(table_id) if isinstance(e, TimedOut))
            assert value["last_ms"] > 0
        finally:
            stop.set()
            await timer
            await nc.drain()

    asyncio.run(main())


@pytest.mark.timeout(90)
def test_a_nats_restart_loses_no_pending_deadline(stack: Stack) -> None:
    """NATS is killed (SIGKILL) while tables wait on deadlines and started again after
    they passed: the schedules come back from the JetStream store and fire at once, the
    timer service (reconnected) retries until the table service serves again, and every
    turn still times out exactly once."""
    run = uuid.uuid4().hex[:6]
    ids = [f"tmn{run}{k}" for k in range(4)]
    server = stack.nats_server
    assert server is not None

    async def main() -> Drivers:
        stop = asyncio.Event()
        timer = await run_timer(stack, stop, "it-nats-restart")
        nc = await nats.connect(stack.settings.nats_url, max_reconnect_attempts=-1,
                                reconnect_time_wait=0.2)
        js = nc.jetstream()
        drivers = Drivers(nc, players=2)
        try:
            for table_id in ids:
                await drivers.open(table_id, config(seconds=3))
            armed = await armed_deadlines(js, drivers, ids)
            assert len(armed) == len(ids), f"only {len(armed)} tables armed"
            await asyncio.to_thread(server.kill)
            # The deadlines pass while NATS is down: they fire when it is back.
            await asyncio.sleep(max(armed.values()) / 1000 - time.time() + 0.3)
            await asyncio.to_thread(server.start)
            # The table service and the relay reconnect on their own (the table
            # service re-creates its lease bucket); until it serves again, the fired
            # timers are retried (the client's retries, then nak with back-off).
            await drivers.wait_ended(ids, timeout=60)
        finally:
            stop.set()
            stats = await timer
            await nc.drain()
        assert not stats.errors, stats.line()
        return drivers

    drivers = asyncio.run(main())
    every_table_finished_with_one_timeout_per_turn(stack, ids, drivers)
