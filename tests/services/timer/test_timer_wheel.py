"""The local timer wheel (pure, the time handed in) and the service's use of it: the
turn it learned is timed out at its deadline by the instance itself, the schedule
stays the backstop and is skipped when the wheel already had the table's answer
(rules R18, R20)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from studroom.domain import errors
from studroom.domain.commands import Timeout
from studroom.domain.events import PauseStarted, TurnStarted
from studroom.services.timer.schedule import TimerPayload, decode_payload, encode_payload
from studroom.services.timer.service import TimerService
from studroom.services.timer.wheel import Wheel
from studroom.services.wire import subjects
from test_timer_handling import FakeJetStream, FakeTable, Msg, public

T0 = 1_800_000_000_000


def timer(table: str, turn: int, deadline: int, seat: int | None = 0) -> TimerPayload:
    return TimerPayload(table_id=table, turn=turn, deadline_ms=deadline, seat=seat)


# ------------------------------------------------------------------------ the wheel


def test_timers_come_due_in_deadline_order_and_only_once() -> None:
    wheel = Wheel()
    for table, deadline in (("b", T0 + 20), ("a", T0 + 10), ("c", T0 + 30)):
        assert wheel.set(timer(table, 1, deadline))
    assert len(wheel) == 3 and wheel.next_deadline() == T0 + 10
    assert wheel.due(T0 + 9) == []
    assert [t.table_id for t in wheel.due(T0 + 20)] == ["a", "b"]
    assert wheel.due(T0 + 20) == [] and wheel.next_deadline() == T0 + 30
    assert [t.table_id for t in wheel.due(T0 + 1000)] == ["c"]
    assert len(wheel) == 0 and wheel.next_deadline() is None


def test_R20_the_next_turn_replaces_the_tables_timer_and_an_older_one_does_not() -> None:
    wheel = Wheel()
    assert wheel.set(timer("t", 4, T0 + 10))
    assert wheel.set(timer("t", 5, T0 + 50))          # the player acted: turn 5 replaces 4
    assert not wheel.set(timer("t", 4, T0 + 10))      # a redelivered older turn
    assert not wheel.set(timer("t", 5, T0 + 50))      # the same turn again
    assert wheel.next_deadline() == T0 + 50           # turn 4's entry is gone
    assert wheel.due(T0 + 10) == []
    assert wheel.due(T0 + 50) == [timer("t", 5, T0 + 50)]


# ------------------------------------------------------------- the service's wheel


class Clock:
    """A wall clock the test moves (seconds since the epoch, like time.time)."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


async def nowhere(subject: str, data: bytes) -> None:
    """Core NATS publishes (turn notices) go nowhere."""


def service_with(table: FakeTable, js: FakeJetStream, clock: Clock, instance_id: str = "unit") -> TimerService:
    nc = SimpleNamespace(jetstream=lambda: js, publish=nowhere)
    return TimerService(nc, instance_id=instance_id, client=table, clock=clock)


def test_R18_a_turn_learned_is_timed_out_by_the_wheel_and_the_backstop_is_skipped() -> None:
    clock, table, js = Clock(T0), FakeTable("ok"), FakeJetStream()
    service = service_with(table, js, clock)
    done: list[tuple[str, str]] = []
    service.on_fire_done = lambda t, code, fired, source: done.append((code, source))

    async def main() -> None:
        stop = asyncio.Event()
        wheel = asyncio.create_task(service.local.run(stop))
        await service._on_public(public(TurnStarted(turn=3, seat=1, kind="act", deadline_ms=T0 + 1000)))
        assert len(service.local.wheel) == 1 and js.published    # durable schedule first, then the wheel
        await asyncio.sleep(0.05)
        assert table.sent == []                                   # not before the deadline
        clock.ms = T0 + 1000
        service.local.wake_up()                                   # (its loop timer, in real time)
        for _ in range(100):
            if done:
                break
            await asyncio.sleep(0.01)
        fired = Msg(subjects.timer_fire("t1"), js.published[-1][1])
        await service._on_fire(fired)                             # the backstop fires later
        stop.set()
        await wheel

    asyncio.run(main())
    assert table.sent == [("t1", Timeout(turn=3, seat=1))]       # once, by the wheel
    assert done == [("ok", "wheel")]
    assert service.stats.local_fired == 1 and service.stats.timed_out == 1
    assert service.stats.fired == 1 and service.stats.backstop_skipped == 1


def test_R5_a_pause_between_hands_is_timed_out_like_a_turn() -> None:
    clock, table, js = Clock(T0), FakeTable("ok"), FakeJetStream()
    service = service_with(table, js, clock)

    async def main() -> None:
        await service._on_public(public(PauseStarted(turn=7, deadline_ms=T0 + 500, pause_ms=500)))
        clock.ms = T0 + 500
        [due] = service.local.wheel.due(T0 + 500)
        await service.local.fire(due)

    asyncio.run(main())
    assert decode_payload(js.published[0][1]) == TimerPayload(table_id="t1", turn=7, deadline_ms=T0 + 500,
                                                              kind="pause")
    assert table.sent == [("t1", Timeout(turn=7))]


def test_a_deadline_already_past_is_left_to_the_schedule() -> None:
    clock, js = Clock(T0), FakeJetStream()
    service = service_with(FakeTable(), js, clock)
    asyncio.run(service._on_public(public(TurnStarted(turn=3, seat=1, kind="act", deadline_ms=T0 - 1))))
    assert js.published and len(service.local.wheel) == 0


def test_R20_a_newer_turn_set_by_another_instance_drops_the_older_timer() -> None:
    """The next turn went to another instance: its notice drops this wheel's timer."""
    js = FakeJetStream()
    here = service_with(FakeTable(), js, Clock(T0))
    there = service_with(FakeTable(), js, Clock(T0), instance_id="other")
    sent: list[Msg] = []

    async def publish(subject: str, data: bytes) -> None:
        sent.append(Msg(subject, data))

    here.nc.publish = there.nc.publish = publish

    async def main() -> None:
        await here._on_public(public(TurnStarted(turn=3, seat=1, kind="act", deadline_ms=T0 + 1000)))
        await here.local.on_notice(sent[-1])                # its own notice: kept
        assert len(here.local.wheel) == 1
        await there._on_public(public(TurnStarted(turn=4, seat=0, kind="act", deadline_ms=T0 + 2000)))
        await here.local.on_notice(sent[-1])

    asyncio.run(main())
    assert [m.subject for m in sent] == ["studroom.timer.turn.t1"] * 2
    assert len(here.local.wheel) == 0 and here.stats.local_dropped == 1
    assert len(there.local.wheel) == 1


def test_a_wheel_timeout_without_a_final_answer_leaves_the_turn_to_the_backstop() -> None:
    clock, table, js = Clock(T0), FakeTable(errors.DUPLICATE_COMMAND, "ok"), FakeJetStream()
    service = service_with(table, js, clock)

    async def main() -> Msg:
        await service.local.fire(timer("t1", 3, T0))
        fired = Msg(subjects.timer_fire("t1"), encode_payload(timer("t1", 3, T0)))
        await service._on_fire(fired)
        return fired

    fired = asyncio.run(main())
    assert len(table.sent) == 2 and fired.acked
    assert service.stats.local_failed == 1 and service.stats.backstop_skipped == 0
    assert service.stats.timed_out == 1
