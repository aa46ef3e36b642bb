"""The timer receives only the messages it acts on (its consumer's filter is the mark
of the events its handler reads, and the two lists are kept the same), and publishes a
turn's schedule without reading the subject before it: it keeps each table's last
schedule in memory (rules R18, R20).  Without servers: the fakes of test_timer_handling."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from studroom.domain.events import EVENT_TYPES, PauseStarted, TurnStarted
from studroom.services.timer.local_wheel import Notice
from studroom.services.timer.schedule import EXPECTED_LAST_SUBJECT_SEQUENCE, decode_payload
from studroom.services.timer.streams import turns_consumer_config
from studroom.services.timer.turns import INTEREST, WANTED_EVENTS
from studroom.services.wire import event_messages, subjects
from subject_matching import matches
from test_timer_handling import DEADLINE_MS, FakeJetStream, FakeTable, Msg
from test_timer_wheel import T0, Clock, public, service_with


def _like_a_turn(kind: str, table_id: str = "t1") -> Msg:
    """The relay's message of one event of type ``kind`` whose body would make a timer
    if it were read."""
    body = event_messages.body([msgspec.json.encode({"type": kind, "turn": 5, "seat": 1, "deadline_ms": DEADLINE_MS})])
    return Msg(subjects.public_message(table_id, event_messages.mark_of([kind])), body,
               event_messages.headers(9, [kind]))


def test_R18_the_events_the_timer_reads_are_the_ones_the_relay_marks_for_it() -> None:
    assert INTEREST is event_messages.TURNS
    assert set(WANTED_EVENTS) == event_messages.TURNS.events == {TurnStarted.__name__, PauseStarted.__name__}


def test_R18_every_event_the_timer_acts_on_is_in_its_consumers_filter_and_no_other() -> None:
    config = turns_consumer_config()
    assert config.filter_subject is None
    assert config.filter_subjects == event_messages.marked_subjects(event_messages.TURNS)
    acted = set()
    for event_type in EVENT_TYPES:
        js = FakeJetStream()
        service = service_with(FakeTable(), js, Clock(T0))
        msg = _like_a_turn(event_type.__name__)
        asyncio.run(service._on_public(msg))
        assert msg.acked
        if js.published:
            acted.add(event_type)
        filtered_in = any(matches(f, msg.subject) for f in config.filter_subjects)
        assert filtered_in == (event_type in acted), event_type
    assert acted == {TurnStarted, PauseStarted}


def _turn(turn: int, table_id: str = "t1") -> Msg:
    return public(TurnStarted(turn=turn, seat=1, kind="act", deadline_ms=T0 + 5_000), table_id=table_id)


def test_R20_a_tables_next_turns_are_scheduled_without_reading_the_subject() -> None:
    js, sent = FakeJetStream(), []
    service = service_with(FakeTable(), js, Clock(T0))
    service.nc.publish = lambda subject, data: _record(sent, subject, data)

    async def main() -> None:
        for turn in (3, 4, 5, 4):
            await service._on_public(_turn(turn))

    asyncio.run(main())
    assert [decode_payload(p).turn for _, p, _ in js.published] == [3, 4, 5]
    assert [h[EXPECTED_LAST_SUBJECT_SEQUENCE] for _, _, h in js.published] == ["0", "1", "2"]
    assert js.reads == 2 and service.stats.schedule_reads == 2       # when it knew nothing, and ...
    assert service.stats.superseded == 1                              # ... turn 4 again: older than 5, as read
    assert len(sent) == 1 and service.stats.notices == 1              # the others told once: then it was ours


def test_R20_a_schedule_that_fired_is_replaced_at_once_without_a_read() -> None:
    """The server names the subject's real last sequence, 0: the next turn goes on it."""
    js = FakeJetStream()
    service = service_with(FakeTable(), js, Clock(T0))

    async def main() -> None:
        await service._on_public(_turn(3))
        js.fire(subjects.timer_schedule("t1"))
        await service._on_public(_turn(4))

    asyncio.run(main())
    assert [h[EXPECTED_LAST_SUBJECT_SEQUENCE] for _, _, h in js.published] == ["0", "0"]
    assert js.reads == 1


def test_R20_an_older_turn_whose_newer_one_fired_is_decided_on_the_subject_as_stored() -> None:
    """The known turn is newer: superseded only if the subject says so (a table whose
    turns started over, a store rebuilt, would otherwise never be timed out again)."""
    js = FakeJetStream()
    service = service_with(FakeTable(), js, Clock(T0))

    async def main() -> None:
        await service._on_public(_turn(8))
        await service._on_public(_turn(7))         # the subject holds turn 8: superseded
        js.fire(subjects.timer_schedule("t1"))
        await service._on_public(_turn(2))         # empty: published, as before the memory

    asyncio.run(main())
    assert [decode_payload(p).turn for _, p, _ in js.published] == [8, 2]
    assert service.stats.superseded == 1 and js.reads == 3


def test_R20_another_instances_schedule_is_known_from_its_notice_or_read_when_it_was_lost() -> None:
    js = FakeJetStream()
    here = service_with(FakeTable(), js, Clock(T0))
    there = service_with(FakeTable(), js, Clock(T0), instance_id="other")
    notices: list[Msg] = []
    here.nc.publish = there.nc.publish = lambda subject, data: _record(notices, subject, data)

    async def main() -> None:
        await here._on_public(_turn(3))
        await there._on_public(_turn(4))            # reads once (it knew nothing), tells the others
        await here._on_notice(notices[-1])
        await here._on_public(_turn(5))             # knows turn 4's sequence from the notice: no read
        await there._on_public(_turn(6))            # its guess (turn 4) is wrong: refused, read again
        await there._on_public(_turn(5))            # older than turn 6: superseded, as read

    asyncio.run(main())
    assert [decode_payload(p).turn for _, p, _ in js.published] == [3, 4, 5, 6]
    assert [h[EXPECTED_LAST_SUBJECT_SEQUENCE] for _, _, h in js.published] == ["0", "1", "2", "3"]
    assert (here.stats.schedule_reads, there.stats.schedule_reads) == (1, 3)
    assert there.stats.superseded == 1
    told = [msgspec.json.decode(m.data, type=Notice) for m in notices]
    assert told == [Notice("unit", 3, 1), Notice("other", 4, 2), Notice("unit", 5, 3), Notice("other", 6, 4)]


@pytest.mark.parametrize("data", [b'{"instance":"old","turn":7}', b"not json"])
def test_a_notice_without_a_sequence_or_unreadable_teaches_nothing(data: bytes) -> None:
    service = service_with(FakeTable(), FakeJetStream(), Clock(T0))
    asyncio.run(service._on_notice(Msg(subjects.turn_notice("t1"), data)))
    assert len(service.last) == 0


async def _record(into: list[Msg], subject: str, data: bytes) -> Any:
    into.append(Msg(subject, data))
