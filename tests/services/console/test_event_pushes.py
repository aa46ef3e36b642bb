"""The console unpacks a relay message into the browser's ``event`` pushes: one per
event, each with the table's version after it (the browser applies events one version
at a time, docs/design/console.md); a tab's pushes wait until its view is answered."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import msgspec
from studroom.domain.events import AntePosted, CardsDealt, DealtCard, TurnStarted
from studroom.services.console.links import event_pushes
from studroom.services.console.ops import TableListener
from studroom.services.wire import event_messages, subjects

TURN = TurnStarted(turn=3, seat=1, kind="act", deadline_ms=5, options=["fold", "call"])
RUN = [AntePosted(seat=0, amount=5), TURN]


def _msg(subject: str | None, first: int, events: list[Any]) -> Any:
    message = event_messages.public_message("t1", first, events)
    return SimpleNamespace(subject=subject or message.subject, headers=message.headers, data=message.payload)


def test_a_message_of_several_events_is_one_push_each_in_order_with_its_version() -> None:
    pushes = event_pushes("t1", _msg(None, 7, RUN))
    assert [(p["version"], p["event"]["type"]) for p in pushes] == [(7, "AntePosted"), (8, "TurnStarted")]
    assert {k: v for k, v in pushes[1].items() if k != "event"} == {
        "push": "event", "table": "t1", "version": 8, "private": False}
    assert json.loads(json.dumps(pushes[1]["event"])) == json.loads(msgspec.json.encode(TURN))   # as the relay wrote it


def test_a_private_copy_is_one_private_push() -> None:
    dealt = CardsDealt(street=1, cards=[DealtCard(seat=1, card="As", up=False)])
    [push] = event_pushes("t1", _msg(subjects.private_events("bob", "t1"), 4, [dealt]))
    assert push["private"] and push["version"] == 4 and push["event"]["cards"] == [[1, "As", False, None]]


def test_a_message_that_is_not_the_relays_is_no_push() -> None:
    good = _msg(None, 7, RUN)
    assert event_pushes("t1", SimpleNamespace(subject=good.subject, headers={}, data=good.data)) == []
    assert event_pushes("t1", SimpleNamespace(subject=good.subject, headers=good.headers, data=b"[{")) == []


def test_a_tabs_pushes_wait_for_its_view_then_come_in_order() -> None:
    sent: list[dict[str, Any]] = []
    listener = TableListener(SimpleNamespace(send=sent.append), "t1")
    listener(_msg(None, 7, RUN))
    assert sent == []
    listener.release()
    listener(_msg(None, 9, [AntePosted(seat=1, amount=5)]))
    assert [p["version"] for p in sent] == [7, 8, 9]
