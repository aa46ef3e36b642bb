"""The pause between hands is carried by the timer service (rules R5, R20), on real
servers: a table service with ``pause_ms``, the relay and the timer service, under
their own credentials on a secure NATS (``timer_stack.py``).

The table service keeps no timer: each pause is a stored turn (``PauseStarted``) that
only the timer's ``Timeout`` ends (``PauseEnded``, then the hand starts in the same
append, with the table service's own seed).  The timer instance is killed (SIGKILL)
during a pause: nothing starts while no timer runs, and a new instance starts the
hand from the durable schedule.
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

import msgspec
import pytest
from studroom.domain.commands import Act, BuyIn, OpenTable, SitDown
from studroom.domain.events import Event, HandStarted, PauseEnded, PauseStarted
from studroom.domain.table import Table
from studroom.services.timer.bootstrap import serve_timer
from studroom.services.wire import subjects
from timer_stack import STAKES, Drivers, Stack, config, running_stack, spawn_timer, watched

pytestmark = pytest.mark.integration

PAUSE_MS = 1500


@pytest.fixture(scope="module")
def stack(database_url: str) -> Iterator[Stack]:
    with running_stack(database_url, "pause", pause_ms=PAUSE_MS) as stack:
        yield stack


async def wait_for(stack: Stack, table_id: str, found: type[Event], count: int, seconds: float) -> list[Event]:
    """The table's stored events once it has ``count`` events of type ``found``."""
    until = time.monotonic() + seconds
    while True:
        events = stack.events(table_id)
        if sum(isinstance(e, found) for e in events) >= count or time.monotonic() > until:
            return events
        await asyncio.sleep(0.1)


async def armed(js: object, table_id: str, turn: int, seconds: float = 10.0) -> bool:
    """Has a timer instance scheduled the pause ``turn`` (its durable backstop)?"""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            pending = await js.get_last_msg(subjects.TIMER_STREAM, subjects.timer_schedule(table_id))  # type: ignore[attr-defined]
            if msgspec.json.decode(pending.data)["turn"] == turn:
                return True
        except Exception:  # noqa: BLE001 (not scheduled yet)
            pass
        await asyncio.sleep(0.05)
    return False


@pytest.mark.timeout(60)
def test_R5_the_pause_between_hands_survives_the_death_of_the_timer_instance(stack: Stack) -> None:
    table_id = f"tp{uuid.uuid4().hex[:6]}"
    log_path = Path(tempfile.mkdtemp(prefix="studroom-it-pause-logs-")) / "timer.log"

    async def main() -> None:
        drivers = Drivers(stack, players=2)
        watcher = await stack.connect_as("service", "projections")
        js = watcher.jetstream()
        proc = spawn_timer(stack, log_path, "it-pause-1")
        stop = asyncio.Event()
        second = None
        try:
            floor = await drivers.client("operator", "floor")
            assert (await floor.send(table_id, OpenTable(table_id=table_id, config=config()))).ok
            for seat in range(2):
                player = await drivers.client("player", drivers.player(table_id, seat))
                assert (await player.send(table_id, SitDown(seat=seat, player=player.name))).ok
                cashier = await drivers.client("service", "cashier")
                buy_in = BuyIn(seat=seat, amount=40 * STAKES.small_bet, player=player.name)
                assert (await cashier.send(table_id, buy_in)).ok
            # The first hand waits for a pause too; the running instance ends it.
            events = await wait_for(stack, table_id, HandStarted, 1, 20)
            first = [e for e in events if isinstance(e, PauseStarted)]
            assert len(first) == 1 and any(isinstance(e, HandStarted) for e in events), (
                f"no first hand; log {log_path}")
            # Hand 1: the bring-in, then a fold: the hand ends and the next pause opens.
            table = Table.replay(events)
            assert table.hand is not None and table.hand.to_act is not None
            bring_in = table.hand.to_act
            player = await drivers.client("player", drivers.player(table_id, bring_in))
            assert (await player.send(table_id, Act(seat=bring_in, action="bring_in"))).ok
            other = 1 - bring_in
            player = await drivers.client("player", drivers.player(table_id, other))
            assert (await player.send(table_id, Act(seat=other, action="fold"))).ok
            pause = [e for e in stack.events(table_id) if isinstance(e, PauseStarted)][-1]
            assert pause.turn > first[0].turn and Table.replay(stack.events(table_id)).hand is None
            # The instance that holds it dies before the pause is over.
            assert await armed(js, table_id, pause.turn), f"pause not scheduled; log {log_path}"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            assert time.time() * 1000 < pause.deadline_ms, "the kill came after the pause: raise PAUSE_MS"
            await asyncio.sleep(max(pause.deadline_ms / 1000 - time.time(), 0) + 0.5)
            assert Table.replay(stack.events(table_id)).hand is None      # nobody else starts it
            # A new instance: the durable schedule (overdue) ends the pause, the hand starts.
            second = asyncio.create_task(serve_timer(
                stack.settings_as("service", "timer"), instance_id="it-pause-2", stop=stop, stats_every=0))
            events = await wait_for(stack, table_id, HandStarted, 2, 20)
            started = [e for e in events if isinstance(e, HandStarted)]
            ended = [e for e in events if isinstance(e, PauseEnded)]
            assert len(started) == 2, f"the second hand did not start; log {log_path}"
            assert [e.turn for e in ended] == [first[0].turn, pause.turn]     # each pause ended once
            assert all((e.command_id or "").startswith("service.timer#") for e in ended)
            assert started[1].seed is not None and started[1].seed != started[0].seed   # the service's seed
        finally:
            stop.set()
            if second is not None:
                await second
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            await drivers.close()
            await watcher.drain()

    asyncio.run(watched(stack, main(), [table_id]))
