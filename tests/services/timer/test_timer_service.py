"""The timer service against the real table service and relay, on real servers, all
under their own service credentials on a secure NATS (operator mode, as the room and
deploy/ run it).

The module runs its own embedded NATS (so that no other test's tables reach these
durable consumers, and none of ours reach theirs), the session's PostgreSQL with a
fresh store schema, and one table service and one relay in a background thread for
all its tests (``timer_stack.py``).  Tables have one-second clocks.  A seat that never
acts (the "sleeper") is timed out by the timer service; the other seats are played by
their players (always the most aggressive legal action, then show).  Drivers and
sleeper sit out as soon as a hand starts, so each table plays exactly one hand.

* a sleeper is timed out on time under both policies (R19), the hand finishes and the
  chips are conserved (replayed from the store);
* the timer service as a subprocess is killed with SIGKILL while ten tables wait on
  deadlines and restarted after they passed: every turn of every sleeper has exactly
  one ``TimedOut`` (counted in the store), never two;
* a timeout arriving after the player acted is refused ``stale_timeout`` and changes
  nothing, sent directly and through the timer path (a late schedule).

Every test's public messages pass the secrecy check (tests/secrecy.py) as the public
spectator sees them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from studroom.domain import errors
from studroom.domain.commands import Timeout
from studroom.domain.events import HandEnded, TimedOut, TurnStarted
from studroom.services.client.table import TableClient
from studroom.services.timer.bootstrap import serve_timer
from studroom.services.timer.schedule import TimerPayload, schedule_headers
from studroom.services.timer.stats import TimerStats
from studroom.services.wire import subjects
from timer_stack import (
    SLEEPER,
    Drivers,
    Stack,
    running_stack,
    armed_deadlines,
    chips_conserved,
    config,
    every_table_finished_with_one_timeout_per_turn,
    exactly_one_timeout_per_sleeper_turn,
    lateness_ms,
    spawn_timer,
    stop_timer,
    watched,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stack(database_url: str) -> Iterator[Stack]:
    with running_stack(database_url, "timer") as stack:
        yield stack


async def run_timer(stack: Stack, stop: asyncio.Event, name: str) -> asyncio.Task[Any]:
    task = asyncio.create_task(serve_timer(
        stack.settings_as("service", "timer"), instance_id=name, stop=stop, stats_every=0))
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
        drivers = Drivers(stack, players=3)
        try:
            for table_id in ids:
                await drivers.open(table_id, config(policy))
            await drivers.wait_ended(ids, timeout=40)
        finally:
            stop.set()
            stats = await timer
            await drivers.close()
        return drivers, stats

    drivers, stats = asyncio.run(watched(stack, main(), ids))
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
        drivers = Drivers(stack, players=3)
        try:
            for table_id in ids:
                await drivers.open(table_id, config())
            await drivers.wait_ended(ids, timeout=40)
        finally:
            stop.set()
            stats = [await timer for timer in timers]
            await drivers.close()
        assert not drivers.refusals, drivers.refusals
        return stats

    stats = asyncio.run(watched(stack, main(), ids))
    total = 0
    for table_id in ids:
        events = stack.events(table_id)
        total += sum(exactly_one_timeout_per_sleeper_turn(table_id, events).values())
        chips_conserved(table_id, events)
    assert sum(s.timed_out for s in stats) == total, [s.line() for s in stats]
    assert all(not s.errors for s in stats), [s.line() for s in stats]


@pytest.mark.timeout(90)
def test_sigkill_of_the_timer_service_loses_no_deadline_and_times_out_nothing_twice(stack: Stack) -> None:
    run = uuid.uuid4().hex[:6]
    ids = [f"tmk{run}{k}" for k in range(10)]
    log_path = Path(tempfile.mkdtemp(prefix="studroom-it-timer-logs-")) / "timer.log"

    async def main() -> Drivers:
        watcher = await stack.connect_as("service", "projections")
        js = watcher.jetstream()
        drivers = Drivers(stack, players=2)
        proc = spawn_timer(stack, log_path, "it-kill-1")
        try:
            for table_id in ids:
                await drivers.open(table_id, config(seconds=3))
            # Wait until every table waits on its sleeper and the timer holds his schedule.
            armed = await armed_deadlines(js, drivers, ids)
            assert len(armed) == len(ids), f"only {len(armed)} tables armed; log {log_path}"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            killed_ms = time.time() * 1000
            # A deadline within half a second of the kill may have been met by the dying
            # instance (its wheel fires on time); every later one passes while no timer runs.
            later = [t for t in ids if armed[t] > killed_ms + 500]
            assert len(later) >= len(ids) // 2, f"the kill came too late to test: {armed}, {killed_ms}"
            await asyncio.sleep(max(armed.values()) / 1000 - time.time() + 0.5)
            for table_id in later:
                assert not any(isinstance(e, TimedOut) for _, e in drivers.seen[table_id]), (
                    f"{table_id} timed out while no timer service ran")
            restarted_ms = time.time() * 1000
            proc = spawn_timer(stack, log_path, "it-kill-2")
            await drivers.wait_ended(ids, timeout=45)
            for table_id in later:   # (how soon depends on the new process's start-up: not asserted)
                first = min(at for at, e in drivers.seen[table_id] if isinstance(e, TimedOut))
                assert first > restarted_ms, f"{table_id}: timed out before the restart"
        finally:
            stop_timer(proc)
            await drivers.close()
            await watcher.drain()
        return drivers

    drivers = asyncio.run(watched(stack, main(), ids))
    every_table_finished_with_one_timeout_per_turn(stack, ids, drivers)
    assert "Traceback" not in log_path.read_text(errors="replace"), log_path.read_text()[-3000:]


@pytest.mark.timeout(60)
def test_R20_a_late_timeout_after_the_player_acted_is_refused_stale_and_changes_nothing(stack: Stack) -> None:
    table_id = f"tms{uuid.uuid4().hex[:6]}"

    async def main() -> None:
        stop = asyncio.Event()
        stats = TimerStats()
        timer = asyncio.create_task(serve_timer(
            stack.settings_as("service", "timer"), instance_id="it-stale", stop=stop,
            stats_every=0, stats=stats))
        # Only the timer may time out a turn, and only it may set a schedule.
        as_timer = await stack.connect_as("service", "timer")
        js = as_timer.jetstream()
        client = TableClient(as_timer, "service", "timer")
        drivers = Drivers(stack, players=2)
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
            await drivers.close()
            await as_timer.drain()
        events = stack.events(table_id)
        exactly_one_timeout_per_sleeper_turn(table_id, events)
        chips_conserved(table_id, events)
        assert not stats.errors, stats.line()

    asyncio.run(watched(stack, main(), [table_id]))


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
        watcher = await stack.connect_as("service", "projections")
        js = watcher.jetstream()
        drivers = Drivers(stack, players=2)
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
            await drivers.close()
            await watcher.drain()
        assert not stats.errors, stats.line()
        return drivers

    drivers = asyncio.run(watched(stack, main()))      # messages of the outage are lost to the watch
    every_table_finished_with_one_timeout_per_turn(stack, ids, drivers)
