"""The table client against a fake request function: its own command subject, its
sequence of command ids, and what its retries mean for a table command (the same id
each time; a duplicate after a timeout is the first attempt carried out).  The retry
loop itself: test_requests.py."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import msgspec
import nats.errors
import pytest
from studroom.domain.commands import Act, BuyIn, Timeout
from studroom.domain.config import TableConfig
from studroom.domain.errors import DUPLICATE_COMMAND, NOT_YOUR_TURN
from studroom.domain.simulate import STAKES
from studroom.domain.views import TableView
from studroom.services.client.table import Refused, TableClient
from studroom.services.wire import protocol, subjects
from request_fakes import FakeNats


def send(nc: FakeNats, command: Any = None, retry_for: float = 10.0) -> tuple[protocol.Reply, TableClient]:
    client = TableClient(nc, "player", "alice", retry_for=retry_for)
    reply = asyncio.run(client.send("t1", command or Act(seat=3, action="call")))
    return reply, client


@pytest.mark.parametrize("code", sorted(protocol.RETRYABLE))
def test_a_retryable_code_is_retried_until_the_command_is_carried_out(code: str) -> None:
    nc = FakeNats(protocol.error(code, "busy"), protocol.error(code, "busy"), protocol.ok(42))
    reply, client = send(nc)
    assert reply == protocol.Reply(ok=True, version=42)
    assert client.requests.retries == 2 and len(nc.requests) == 3
    assert {subject for subject, _ in nc.requests} == {subjects.command_from("player", "alice", "t1")}
    assert len({data for _, data in nc.requests}) == 1          # the same command each time


def test_a_refusal_that_is_not_retryable_is_answered_at_once() -> None:
    nc = FakeNats(protocol.error(NOT_YOUR_TURN, "seat 2 acts"))
    reply, client = send(nc)
    assert not reply.ok and reply.error is not None and reply.error.code == NOT_YOUR_TURN
    assert client.requests.retries == 0 and len(nc.requests) == 1


def test_a_command_without_an_id_gets_one_kept_across_retries() -> None:
    nc = FakeNats(protocol.error(protocol.UNAVAILABLE, "moving"), protocol.ok(1))
    send(nc, Act(seat=3, action="call"))
    ids = {msgspec.json.decode(data)["command_id"] for _, data in nc.requests}
    assert len(ids) == 1 and None not in ids


def test_a_duplicate_after_a_timeout_means_the_first_attempt_was_carried_out() -> None:
    nc = FakeNats(nats.errors.TimeoutError(), protocol.error(DUPLICATE_COMMAND, "already"))
    reply, _ = send(nc)
    assert reply == protocol.Reply(ok=True)


def test_a_duplicate_without_a_timeout_is_a_refusal() -> None:
    nc = FakeNats(protocol.error(DUPLICATE_COMMAND, "already"))
    reply, _ = send(nc)
    assert reply.error is not None and reply.error.code == DUPLICATE_COMMAND


def _ids(nc: FakeNats) -> list[str]:
    return [msgspec.json.decode(data)["command_id"] for _, data in nc.requests]


@pytest.mark.parametrize(("role", "name", "command"), [
    ("player", "alice", Act(seat=3, action="call")),
    ("operator", "floor", BuyIn(seat=3, amount=500)),
    ("service", "timer", Timeout(turn=4)),
])
def test_each_identity_sends_on_its_own_command_subject(role: str, name: str, command: Any) -> None:
    nc = FakeNats(protocol.ok(1))
    asyncio.run(TableClient(nc, role, name).send("t1", command))
    [(subject, data)] = nc.requests
    assert subject == subjects.command_from(role, name, "t1")
    # the server maps it onto the partition subject that only this identity may publish to
    assert msgspec.json.decode(data)["type"] == type(command).__name__


def test_commands_are_numbered_in_sequence_one_counter_for_all_tables() -> None:
    nc = FakeNats(*[protocol.ok(1)] * 6)
    client = TableClient(nc, "player", "alice")

    async def play() -> None:
        for table in ("t1", "t2", "t1", "t3", "t2", "t1"):
            await client.send(table, Act(seat=3, action="call"))

    asyncio.run(play())
    ids = [int(i) for i in _ids(nc)]
    assert ids == sorted(set(ids)) and all(0 < i < 2**63 for i in ids)


def test_an_id_the_caller_gave_is_kept() -> None:
    nc = FakeNats(protocol.ok(1))
    asyncio.run(TableClient(nc, "player", "alice").send("t1", Act(seat=3, action="call", command_id="77")))
    assert _ids(nc) == ["77"]


def test_stamp_numbers_a_command_once_so_that_a_retry_keeps_its_id() -> None:
    client = TableClient(FakeNats(), "player", "alice")
    stamped = client.stamp(Act(seat=3, action="call"))
    assert stamped.command_id is not None and client.stamp(stamped) is stamped
    assert int(client.stamp(Act(seat=3, action="fold")).command_id or 0) > int(stamped.command_id)


class SlowNats(FakeNats):
    """Replies ``ok`` after ``delay`` seconds; records when each request arrived."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.in_flight: dict[str, int] = {}
        self.most_in_flight: dict[str, int] = {}

    async def request(self, subject: str, data: bytes, timeout: float) -> Any:
        self.requests.append((subject, data))
        self.in_flight[subject] = self.in_flight.get(subject, 0) + 1
        self.most_in_flight[subject] = max(self.most_in_flight.get(subject, 0), self.in_flight[subject])
        await asyncio.sleep(self.delay)
        self.in_flight[subject] -= 1
        return SimpleNamespace(data=protocol.ok(1))


def test_one_command_at_a_time_per_table_so_ids_arrive_in_order() -> None:
    nc = SlowNats(0.01)
    client = TableClient(nc, "player", "alice")

    async def play() -> None:
        await asyncio.gather(*(client.send(table, Act(seat=3, action="call"))
                               for table in ("t1", "t2") for _ in range(5)))

    asyncio.run(play())
    for table in ("t1", "t2"):
        subject = subjects.command_from("player", "alice", table)
        ids = [int(msgspec.json.decode(d)["command_id"]) for s, d in nc.requests if s == subject]
        assert len(ids) == 5 and ids == sorted(ids)
        assert nc.most_in_flight[subject] == 1
    assert sum(nc.most_in_flight.values()) == 2          # the two tables did not wait on each other


def _view() -> TableView:
    return TableView(table_id="t1", config=TableConfig(game="seven_card_stud", stakes=STAKES),
                     version=9, hand_no=0, button=None, seats=[])


def test_view_asks_on_the_own_command_subject_and_returns_the_table_view() -> None:
    view = _view()
    nc = FakeNats(protocol.error(protocol.UNAVAILABLE, "moving"),
                  msgspec.json.encode(protocol.Reply(ok=True, version=9, view=view)))
    assert asyncio.run(TableClient(nc, "player", "alice").view("t1")) == view
    assert [s for s, _ in nc.requests] == [subjects.command_from("player", "alice", "t1")] * 2
    assert {d for _, d in nc.requests} == {msgspec.json.encode(protocol.ViewTable())}


def test_a_refused_view_raises_with_its_code() -> None:
    nc = FakeNats(protocol.error(protocol.UNKNOWN_TABLE, "no table t1"))
    with pytest.raises(Refused) as refused:
        asyncio.run(TableClient(nc, "player", "alice").view("t1"))
    assert refused.value.code == protocol.UNKNOWN_TABLE
