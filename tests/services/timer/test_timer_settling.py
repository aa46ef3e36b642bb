"""Settling (services/timer/settling.py): a turn due far off is held a moment before its
schedule is written, and the table's next turn ends it unwritten.

The rules of holding, on their own (no server: the write and the ack are recorded);
then the timer service on real servers (timer_stack.py, its own NATS), with ten-second
clocks: the players' quick turns are settled, the sleeper's lasting turn gets its
schedule and times out on time; two instances sharing the turns time each sleeper's
turn out once; and a timer service killed with SIGKILL while it
holds the sleepers' turns, none of them written yet, loses none: their messages come
again to the restarted service, which times each out once, on time.
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
from studroom.services.timer.bootstrap import serve_timer
from studroom.services.timer.schedule import TimerPayload
from studroom.services.timer.settling import HOLD_IF_DUE_AFTER, Settling
from studroom.services.timer.stats import TimerStats
from studroom.services.wire import subjects
from timer_stack import (
    Drivers,
    Stack,
    running_stack,
    config,
    every_table_finished_with_one_timeout_per_turn,
    lateness_ms,
    spawn_timer,
    stop_timer,
    watched,
)

NOW_MS = 1_000_000
FAR = NOW_MS + int(HOLD_IF_DUE_AFTER * 1000) + 1


def _timer(turn: int, table: str = "t1", deadline_ms: int = FAR) -> TimerPayload:
    return TimerPayload(table_id=table, turn=turn, deadline_ms=deadline_ms, seat=0, kind="act")


class _Recorded:
    def __init__(self) -> None:
        self.acked: list[str] = []
        self.written: list[tuple[int, str]] = []
        self.stats = TimerStats()

    async def ack(self, msg: Any) -> None:
        self.acked.append(msg)

    async def write(self, timer: TimerPayload, msg: Any) -> None:
        self.written.append((timer.turn, msg))

    def settling(self, **options: Any) -> Settling:
        return Settling(self.write, self.ack, self.stats, **options)


def test_only_a_turn_due_later_than_a_redelivery_could_come_is_held_and_only_while_there_is_room() -> None:
    settling = _Recorded().settling(max_held=1)
    assert settling.wants(_timer(1), NOW_MS)
    assert not settling.wants(_timer(1, deadline_ms=FAR - 2), NOW_MS)      # due sooner: written at once

    async def run() -> None:
        await settling.hold(_timer(1), "m1")
        assert not settling.wants(_timer(1, table="t2"), NOW_MS)           # full
        assert settling.wants(_timer(2), NOW_MS)                           # the held table's next turn

    asyncio.run(run())


def test_the_next_turn_ends_the_held_one_unwritten_and_a_late_older_one_is_over_at_once() -> None:
    recorded = _Recorded()
    settling = recorded.settling()

    async def run() -> None:
        assert not await settling.hold(_timer(1), "m1")       # nothing of the table held before
        assert await settling.hold(_timer(2), "m2")
        assert recorded.acked == ["m1"]
        assert await settling.hold(_timer(1), "m1 again")     # delivered late: over
        assert recorded.acked == ["m1", "m1 again"]
        assert await settling.hold(_timer(2), "m2 again")     # a redelivery: held, nothing acked
        assert recorded.acked == ["m1", "m1 again"] and len(settling) == 1
        await settling.end_older("t1", 3)                     # another instance holds turn 3
        assert recorded.acked[-1] == "m2 again" and len(settling) == 0
        assert recorded.written == [] and recorded.stats.settled == 3

    asyncio.run(run())


def test_a_turn_still_held_after_the_settling_time_is_written_and_the_rest_when_it_stops() -> None:
    recorded = _Recorded()
    settling = recorded.settling(settle=0.2)

    async def run() -> None:
        stop = asyncio.Event()
        running = asyncio.create_task(settling.run(stop))
        await settling.hold(_timer(1), "m1")
        await asyncio.sleep(0.5)
        assert recorded.written == [(1, "m1")] and recorded.acked == []   # the writer acks it
        await settling.hold(_timer(2), "m2")
        stop.set()
        await running
        assert recorded.written == [(1, "m1"), (2, "m2")] and len(settling) == 0

    asyncio.run(run())


def test_with_nothing_held_it_sleeps_and_the_first_turn_held_wakes_it() -> None:
    """Idle services cost next to nothing (issue 20): no passes over the held turns
    while there are none (it woke four times a second before)."""
    recorded = _Recorded()
    settling = recorded.settling(settle=0.2)
    passes = 0
    write_held = settling._write_held

    async def counted(before: float) -> None:
        nonlocal passes
        passes += 1
        await write_held(before)

    settling._write_held = counted    # type: ignore[method-assign]

    async def run() -> None:
        stop = asyncio.Event()
        running = asyncio.create_task(settling.run(stop))
        await asyncio.sleep(0.5)
        assert passes == 0
        await settling.hold(_timer(1), "m1")
        await asyncio.sleep(0.5)
        assert recorded.written == [(1, "m1")]
        stop.set()
        await running

    asyncio.run(run())


# ----------------------------------------------------------- on real servers

SECONDS = 10          # the tables' clocks: every turn is held (HOLD_IF_DUE_AFTER is 7 s)


@pytest.fixture(scope="module")
def stack(database_url: str) -> Iterator[Stack]:
    with running_stack(database_url, "settle") as stack:
        yield stack


async def _scheduled_turn(js: Any, table_id: str) -> int | None:
    """The turn of the table's schedule as stored (None: none)."""
    try:
        pending = await js.get_last_msg(subjects.TIMER_STREAM, subjects.timer_schedule(table_id))
    except Exception:  # noqa: BLE001 (no such message)
        return None
    return int(msgspec.json.decode(pending.data)["turn"])


async def _sleepers_waiting(drivers: Drivers, ids: list[str], wait: float = 30.0) -> dict[str, int]:
    """Each table's sleeper's open turn, as soon as every table has one."""
    async with asyncio.timeout(wait):
        while True:
            turns = {t: drivers.sleeper_waiting(t) for t in ids}
            if all(turns.values()):
                return {t: turn.turn for t, turn in turns.items() if turn is not None}
            await asyncio.sleep(0.01)


@pytest.mark.integration
@pytest.mark.timeout(90)
def test_quick_turns_are_settled_unwritten_and_a_lasting_one_is_written_and_times_out_on_time(stack: Stack) -> None:
    ids = [f"tst{uuid.uuid4().hex[:6]}{k}" for k in range(3)]

    async def main() -> tuple[Drivers, TimerStats, dict[str, int | None]]:
        stop = asyncio.Event()
        stats = TimerStats()
        timer = asyncio.create_task(serve_timer(stack.settings_as("service", "timer"), instance_id="it-settle",
                                                stop=stop, stats_every=0, stats=stats))
        await asyncio.sleep(0.2)
        drivers = Drivers(stack, players=3)
        watcher = await stack.connect_as("service", "projections")
        try:
            for table_id in ids:
                await drivers.open(table_id, config("check_or_fold", seconds=SECONDS))
            waiting = await _sleepers_waiting(drivers, ids)
            await asyncio.sleep(2.0)                  # the sleepers' turns last: their schedules are written
            js = watcher.jetstream()
            stored = {t: await _scheduled_turn(js, t) for t in ids}
            assert stored == waiting, (stored, waiting)
            await drivers.wait_ended(ids, timeout=60)
        finally:
            stop.set()
            await timer
            await drivers.close()
            await watcher.drain()
        return drivers, stats, stored

    drivers, stats, _ = asyncio.run(watched(stack, main(), ids))
    every_table_finished_with_one_timeout_per_turn(stack, ids, drivers)
    assert stats.settled > 0 and stats.scheduled < stats.turns_seen, stats.line()
    for table_id in ids:
        late = lateness_ms(drivers.seen[table_id])
        assert late and 0 <= min(late) and max(late) < 1500, f"{table_id}: {late}"


@pytest.mark.integration
@pytest.mark.timeout(90)
def test_two_instances_holding_the_turns_they_get_time_each_sleeper_turn_out_once(stack: Stack) -> None:
    """The turns of a table go to either instance: an instance that holds a table's turn
    without having held its last one tells the others, whose older turn is over."""
    ids = [f"ts2{uuid.uuid4().hex[:6]}{k}" for k in range(4)]

    async def main() -> list[TimerStats]:
        stop = asyncio.Event()
        stats = [TimerStats(), TimerStats()]
        timers = [asyncio.create_task(serve_timer(stack.settings_as("service", "timer"), instance_id=f"it-settle-{k}",
                                                  stop=stop, stats_every=0, stats=stats[k])) for k in range(2)]
        await asyncio.sleep(0.2)
        drivers = Drivers(stack, players=3)
        try:
            for table_id in ids:
                await drivers.open(table_id, config("check_or_fold", seconds=SECONDS))
            await drivers.wait_ended(ids, timeout=60)
        finally:
            stop.set()
            await asyncio.gather(*timers)
            await drivers.close()
        every_table_finished_with_one_timeout_per_turn(stack, ids, drivers)
        return stats

    stats = asyncio.run(watched(stack, main(), ids))
    lines = [s.line() for s in stats]
    assert sum(s.settled for s in stats) > 0 and all(not s.errors for s in stats), lines
    assert sum(s.timed_out for s in stats) == sum(
        1 for table_id in ids for e in stack.events(table_id) if type(e).__name__ == "TimedOut"), lines


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_sigkill_while_the_turns_are_held_unwritten_loses_none_and_times_each_out_once_on_time(
        stack: Stack) -> None:
    ids = [f"tsk{uuid.uuid4().hex[:6]}{k}" for k in range(4)]
    log_path = Path(tempfile.mkdtemp(prefix="studroom-it-settling-logs-")) / "timer.log"

    async def main() -> tuple[Drivers, list[str]]:
        watcher = await stack.connect_as("service", "projections")
        js = watcher.jetstream()
        drivers = Drivers(stack, players=3)
        proc = spawn_timer(stack, log_path, "it-settle-kill-1")
        try:
            await asyncio.sleep(1.0)                  # started: its consumer delivers to it
            for table_id in ids:
                await drivers.open(table_id, config("check_or_fold", seconds=SECONDS))
            waiting = await _sleepers_waiting(drivers, ids)
            os.killpg(proc.pid, signal.SIGKILL)       # within the settling second of the last one
            proc.wait(10)
            unwritten = [t for t in ids if await _scheduled_turn(js, t) != waiting[t]]
            assert unwritten, "every schedule was written before the kill: nothing held to test"
            proc = spawn_timer(stack, log_path, "it-settle-kill-2")
            await drivers.wait_ended(ids, timeout=80)
        finally:
            stop_timer(proc)
            await drivers.close()
            await watcher.drain()
        return drivers, unwritten

    started = time.monotonic()
    drivers, unwritten = asyncio.run(watched(stack, main(), ids))
    print(f"held unwritten at the kill: {len(unwritten)} of {len(ids)}; {time.monotonic() - started:.1f} s")
    every_table_finished_with_one_timeout_per_turn(stack, ids, drivers)
    for table_id in unwritten:           # came again to the restarted service before the deadline
        late = lateness_ms(drivers.seen[table_id])
        assert late and 0 <= min(late) and max(late) < 1500, f"{table_id}: {late}"
    assert "Traceback" not in log_path.read_text(errors="replace"), log_path.read_text()[-3000:]
