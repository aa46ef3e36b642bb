"""The relay's message format, written and read in one place (wire/event_messages.py):
marks, filters, bodies, versions; a message of the first format still reads."""

from __future__ import annotations

from types import SimpleNamespace

import msgspec
import pytest
from studroom.domain.events import Acted, PauseStarted, PlayerLeft, TableEvent, TurnStarted
from studroom.services.wire import event_messages, subjects
from studroom.services.wire.event_messages import LEAVES, TURNS


def _matches(pattern: str, subject: str) -> bool:
    want, got = pattern.split("."), subject.split(".")
    return len(want) == len(got) and all(w in ("*", g) for w, g in zip(want, got))


def test_the_interests_are_the_timer_s_and_the_cashier_s_events() -> None:
    assert TURNS.events == {TurnStarted.__name__, PauseStarted.__name__}
    assert LEAVES.events == {PlayerLeft.__name__}


@pytest.mark.parametrize(("types", "mark"), [
    (["Acted", "Announced"], "plain"),
    (["Acted", "TurnStarted"], "turn"),
    (["PauseStarted"], "turn"),
    (["LeaveRequested", "PlayerLeft"], "left"),
    (["PlayerLeft", "Acted", "TurnStarted"], "turn_left"),
])
def test_a_filtered_consumer_gets_every_message_with_an_event_it_wants_and_no_other(types, mark) -> None:
    assert event_messages.mark_of(types) == mark
    subject = subjects.public_message("t1", mark)
    for interest in (TURNS, LEAVES):
        for first_format in types:          # a message stored before the upgrade, on its event's type
            old = subjects.public_message("t1", first_format)
            assert any(_matches(f, old) for f in event_messages.marked_subjects(interest)) == (
                first_format in interest.events) == event_messages.is_wanted(old, interest)
        wanted = not interest.events.isdisjoint(types)
        assert any(_matches(f, subject) for f in event_messages.marked_subjects(interest)) == wanted
        assert event_messages.is_wanted(subject, interest) == wanted


def test_a_public_message_holds_its_events_in_order_with_the_last_one_s_version() -> None:
    events = [Acted(seat=1, action="call", amount=10),
              TurnStarted(turn=8, seat=2, kind="act", deadline_ms=99, options=["fold", "call"], sizes=[])]
    message = event_messages.public_message("t1", 41, events)
    assert message.subject == "studroom.pub.t1.turn"
    assert message.headers == {"Studroom-Version": "42", "Studroom-Events": "Acted,TurnStarted"}
    assert event_messages.decode_events(message.payload) == events
    msg = SimpleNamespace(data=message.payload, headers=message.headers)
    assert event_messages.events_of(msg) == [(41, events[0]), (42, events[1])]


def test_a_message_of_the_first_format_one_event_as_an_object_still_reads() -> None:
    event = PlayerLeft(seat=3, player="ann", cashed_out=120)
    data = msgspec.json.encode(event)
    assert data[:1] == b"{"
    msg = SimpleNamespace(data=data, headers={"Studroom-Version": "9", "Studroom-Event": "PlayerLeft"})
    assert event_messages.events_of(msg) == [(9, event)]


def test_what_is_no_message_of_events_is_refused() -> None:
    for data in (b"", b"[1]", b'{"type": "Nope"}', b"not json"):
        with pytest.raises((msgspec.DecodeError, msgspec.ValidationError)):
            event_messages.decode_events(data)
    with pytest.raises(ValueError):
        event_messages.first_version({}, 1)
    assert msgspec.json.decode(b"[]", type=list[TableEvent]) == event_messages.decode_events(b"[]")
