"""The fault drill's judge (tools/faults/consistency.py) finds what it must: a version
on the stream twice, a version skipped, an event that is not the stored event's public
view, a stored event the stream lacks, chips that do not add up; and nothing on an
honest stream, whatever the number of events in a message."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import msgspec
from studroom.domain import views
from studroom.domain.events import CardsDealt, ChipsBought, Event
from studroom.domain.simulate import new_table, play_hand
from studroom.tools.faults.consistency import Consistency
from studroom.services.wire import event_messages

TABLE = "f01"


def _events(hands: int = 2) -> list[Event]:
    table, events = new_table("seven_card_stud", 3)
    rng = random.Random(5)
    for _ in range(hands):
        events += play_hand(table, rng)
    return events


def _message(version: int, events: list[Event], seq: int) -> Any:
    """A stream message as nats-py hands it over, the relay's way: the public views of
    ``events``, the first at ``version``."""
    subject, headers, payload = event_messages.public_message(TABLE, version, [views.public(e) for e in events])
    return SimpleNamespace(subject=subject, headers=headers, data=payload,
                           metadata=SimpleNamespace(sequence=SimpleNamespace(stream=seq)))


def _judge(events: list[Event], versions: list[int]) -> Consistency:
    judge = Consistency("postgresql://unused", ["s0"], [TABLE])
    judge.learn(TABLE, events)
    for seq, version in enumerate(versions, start=1):
        judge.take(_message(version, [events[version - 1]], seq))
    judge.compare()
    return judge


def test_an_honest_stream_is_the_store() -> None:
    events = _events()
    judge = _judge(events, list(range(1, len(events) + 1)))
    assert judge.problems == [] and judge.duplicates == 0
    assert judge.missing(judge.stored_versions()) == {}
    assert judge.chip_problems() == []
    assert judge.stream_seq == len(events)


def test_a_message_of_several_events_is_judged_event_by_event() -> None:
    events = _events()
    judge = Consistency("postgresql://unused", ["s0"], [TABLE])
    judge.learn(TABLE, events)
    runs = [(1, 4), (4, 5), (5, len(events) + 1)]        # versions [first, after)
    for seq, (first, after) in enumerate(runs, start=1):
        judge.take(_message(first, events[first - 1:after - 1], seq))
    judge.compare()
    assert judge.problems == [] and judge.duplicates == 0
    assert judge.missing(judge.stored_versions()) == {}


def test_a_message_again_is_one_problem_of_all_its_versions() -> None:
    events = _events()
    judge = Consistency("postgresql://unused", ["s0"], [TABLE])
    judge.learn(TABLE, events)
    for seq, (first, after) in enumerate([(1, 4), (4, 7), (4, 8)], start=1):
        judge.take(_message(first, events[first - 1:after - 1], seq))
    judge.compare()
    assert judge.duplicates == 3
    assert judge.problems == [f"{TABLE}: versions 4..6 on the stream again (after 6)"]
    assert judge.published[TABLE] == 7 and judge.unchecked[TABLE] == []


def test_a_version_twice_is_a_duplicate() -> None:
    events = _events()
    judge = _judge(events, [1, 2, 3, 3, 4])
    assert judge.duplicates == 1
    assert judge.problems == [f"{TABLE}: version 3 on the stream again (after 3)"]


def test_a_skipped_version_is_named_and_a_stored_event_not_published_is_missing() -> None:
    events = _events()
    judge = _judge(events, [1, 2, 5])
    assert judge.problems == [f"{TABLE}: versions 3..4 skipped on the stream"]
    assert judge.missing({TABLE: len(events)}) == {TABLE: (6, len(events))}


def test_a_message_that_is_not_the_public_view_is_found() -> None:
    events = _events()
    dealt = next(v for v, e in enumerate(events, start=1) if isinstance(e, CardsDealt))
    judge = Consistency("postgresql://unused", ["s0"], [TABLE])
    judge.learn(TABLE, events)
    for version in range(1, dealt + 1):
        msg = _message(version, [events[version - 1]], version)
        if version == dealt:            # the stored event as it is: down cards and all
            msg.data = event_messages.body([msgspec.json.encode(events[version - 1])])
        judge.take(msg)
    judge.compare()
    assert judge.problems == [f"{TABLE} v{dealt}: the stream's event is not the stored event's public view"]


def test_a_message_ahead_of_the_store_waits_for_its_event() -> None:
    events = _events()
    judge = Consistency("postgresql://unused", ["s0"], [TABLE])
    judge.learn(TABLE, events[:3])
    for version in range(1, 6):
        judge.take(_message(version, [events[version - 1]], version))
    judge.compare()
    assert judge.problems == [] and len(judge.unchecked[TABLE]) == 2
    judge.learn(TABLE, events[3:])
    judge.compare()
    assert judge.problems == [] and judge.unchecked[TABLE] == []


def test_chips_that_do_not_add_up_are_found() -> None:
    events = _events()
    i = next(i for i, e in enumerate(events) if isinstance(e, ChipsBought))
    events[i] = msgspec.structs.replace(events[i], amount=events[i].amount + 1)
    judge = Consistency("postgresql://unused", ["s0"], [TABLE])
    judge.learn(TABLE, events)
    assert judge.chip_problems()
