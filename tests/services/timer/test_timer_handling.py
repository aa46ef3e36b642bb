"""What the timer service does with each message, without servers: a fake JetStream
holds the pending schedules, a fake table answers the timeouts (rules R19, R20)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import msgspec
import nats.errors
import nats.js.errors
import pytest
from studroom.domain import errors
from studroom.domain.commands import Timeout
from studroom.domain.events import Acted, Event, PauseStarted, PlayerLeft, TimedOut, TurnStarted
from studroom.services.timer.schedule import (
    EXPECTED_LAST_SUBJECT_SEQUENCE,
    TimerPayload,
    decode_payload,
    encode_payload,
    schedule_time,
)
from studroom.services.timer.service import BAD_EVENT, BAD_TIMER, BAD_TURN, TimerService
from studroom.services.timer.timeouts import table_client
from studroom.services.timer.turns import WRONG_LAST_SEQUENCE
from studroom.services.wire import event_messages, protocol, subjects

FIRED = datetime(2026, 11, 29, 12, 0, 0, 100_000, tzinfo=UTC)
DEADLINE_MS = int(FIRED.timestamp() * 1000) - 100


class Msg:
    """A JetStream message as a handler sees it: it records its ack or nak."""

    def __init__(self, subject: str, data: bytes, headers: dict[str, str] | None = None,
                 num_delivered: int = 1) -> None:
        self.subject = subject
        self.data = data
        self.headers = headers
        self.metadata = SimpleNamespace(num_delivered=num_delivered, timestamp=FIRED)
        self.acked = False
        self.naks: list[float | None] = []

    async def ack(self) -> None:
        self.acked = True

    async def nak(self, delay: float | None = None) -> None:
        self.naks.append(delay)


class FakeJetStream:
    """The schedule subjects: the last message of each, sequences, compare-and-set."""

    def __init__(self, lose_races: int = 0) -> None:
        self.last: dict[str, tuple[int, bytes]] = {}
        self.published: list[tuple[str, bytes, dict[str, str]]] = []
        self.reads = 0
        self.seq = 0
        self.lose_races = lose_races

    async def get_last_msg(self, stream: str, subject: str, direct: bool = False) -> Any:
        assert stream == subjects.TIMER_STREAM and direct
        self.reads += 1
        if subject not in self.last:
            raise nats.js.errors.NotFoundError
        seq, data = self.last[subject]
        return SimpleNamespace(seq=seq, data=data)

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str]) -> Any:
        expected = int(headers[EXPECTED_LAST_SUBJECT_SEQUENCE])
        if self.lose_races:
            self.lose_races -= 1
            self._store(subject, encode_payload(TimerPayload(table_id="other", turn=0, deadline_ms=0)))
            raise nats.js.errors.APIError(err_code=WRONG_LAST_SEQUENCE)
        actual = self.last.get(subject, (0, b""))[0]
        if actual != expected:          # as the server says it
            raise nats.js.errors.APIError(err_code=WRONG_LAST_SEQUENCE, description=f"wrong last sequence: {actual}")
        self.published.append((subject, payload, headers))
        self._store(subject, payload)
        return SimpleNamespace(stream=subjects.TIMER_STREAM, seq=self.seq)

    def fire(self, subject: str) -> None:
        """The server fired the subject's schedule: it leaves the stream."""
        del self.last[subject]

    def _store(self, subject: str, payload: bytes) -> None:
        self.seq += 1
        self.last[subject] = (self.seq, payload)


class FakeTable:
    """Answers every Timeout with the next of ``answers`` (a code, or an exception)."""

    def __init__(self, *answers: str | Exception) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, Any]] = []

    async def send(self, table_id: str, command: Any, timeout: float) -> protocol.Reply:
        self.sent.append((table_id, command))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return protocol.decode_reply(protocol.ok(9) if answer == "ok" else protocol.error(answer, "no"))


async def _publish(subject: str, data: bytes) -> None:
    """Core NATS publishes (the turn notices to the other instances) go nowhere."""


def _service(table: FakeTable | None = None, js: FakeJetStream | None = None) -> TimerService:
    nc = SimpleNamespace(jetstream=lambda: js or FakeJetStream(), publish=_publish)
    return TimerService(nc, instance_id="unit", client=table or FakeTable())


def _fired(table_id: str = "t1", turn: int = 4, seat: int | None = 2, num_delivered: int = 1) -> Msg:
    payload = TimerPayload(table_id=table_id, turn=turn, deadline_ms=DEADLINE_MS, seat=seat)
    return Msg(subjects.timer_fire(table_id), encode_payload(payload), num_delivered=num_delivered)


# -------------------------------------------------------------------- fired timers


def test_R19_a_fired_timer_times_out_its_turn_once_and_is_acked_after_the_reply() -> None:
    table = FakeTable("ok")
    service = _service(table)
    done: list[tuple[TimerPayload, str, int | None, str]] = []
    service.on_fire_done = lambda *args: done.append(args)
    msg = _fired()
    asyncio.run(service._on_fire(msg))
    assert table.sent == [("t1", Timeout(turn=4, seat=2))]     # no id, no clock: the client and the table add them
    assert msg.acked and not msg.naks
    assert service.stats.timed_out == 1 and service.stats.fired == 1
    assert list(service.stats.fire_lateness_ms) == [100]
    assert done == [(decode_payload(msg.data), "ok", DEADLINE_MS + 100, "schedule")]


@pytest.mark.parametrize("code", [errors.STALE_TIMEOUT, errors.NO_HAND])
def test_R20_a_timer_for_a_turn_that_is_over_is_dropped_as_stale(code: str) -> None:
    service = _service(FakeTable(code))
    msg = _fired()
    asyncio.run(service._on_fire(msg))
    assert msg.acked and service.stats.stale == 1
    assert not service.stats.errors and service.stats.timed_out == 0


def test_a_timeout_refused_as_a_duplicate_is_sent_again_later_with_a_later_id() -> None:
    """Another instance whose clock is ahead numbered this table's timeouts higher:
    this one was not carried out, its redelivery will be numbered later."""
    service = _service(FakeTable(errors.DUPLICATE_COMMAND))
    msg = _fired()
    asyncio.run(service._on_fire(msg))
    assert not msg.acked and msg.naks == [pytest.approx(0.2)]
    assert service.stats.duplicate == 1 and service.stats.retried == 1 and not service.stats.errors


@pytest.mark.parametrize("code", sorted(protocol.RETRYABLE))
def test_a_busy_table_gets_the_timer_again_later(code: str) -> None:
    service = _service(FakeTable(code))
    msg = _fired(num_delivered=3)
    asyncio.run(service._on_fire(msg))
    assert not msg.acked and msg.naks == [pytest.approx(0.8)]
    assert service.stats.retried == 1 and not service.stats.errors


@pytest.mark.parametrize("failure", [nats.errors.TimeoutError(), nats.errors.NoRespondersError()])
def test_an_unreachable_table_gets_the_timer_again_later(failure: Exception) -> None:
    service = _service(FakeTable(failure))
    msg = _fired()
    asyncio.run(service._on_fire(msg))
    assert not msg.acked and msg.naks == [pytest.approx(0.2)]
    assert service.stats.retried == 1


def test_any_other_refusal_is_an_error_and_not_retried() -> None:
    service = _service(FakeTable(errors.NOT_YOUR_TURN))
    msg = _fired()
    asyncio.run(service._on_fire(msg))
    assert msg.acked and service.stats.errors == {errors.NOT_YOUR_TURN: 1}


def test_a_fired_message_that_is_not_a_timer_is_acked_and_counted() -> None:
    table = FakeTable()
    service = _service(table)
    msg = Msg(subjects.timer_fire("t1"), b"{}")
    asyncio.run(service._on_fire(msg))
    assert msg.acked and service.stats.errors == {BAD_TIMER: 1} and not table.sent


# ------------------------------------------------------------------- public events


def public(*events: Event, table_id: str = "t1") -> Msg:
    """The relay's message of a run of ``table_id``'s events (from version 9 on)."""
    message = event_messages.public_message(table_id, 9, events)
    return Msg(message.subject, message.payload, message.headers)


def _first_format(event: Event) -> Msg:
    """A message of the first format (one event, an object), marked as now."""
    message = event_messages.public_message("t1", 9, [event])
    return Msg(message.subject, msgspec.json.encode(event), message.headers)


def _turn(turn: int, deadline_ms: int = DEADLINE_MS, seat: int = 1, kind: str = "act") -> TurnStarted:
    return TurnStarted(turn=turn, seat=seat, kind=kind, deadline_ms=deadline_ms, options=["fold"])


@pytest.mark.parametrize("made", [public, _first_format], ids=["array", "first_format"])
def test_a_turn_started_becomes_the_tables_one_schedule(made: Any) -> None:
    js = FakeJetStream()
    service = _service(js=js)
    msg = made(_turn(7, seat=3, kind="show"))
    asyncio.run(service._on_public(msg))
    assert msg.acked and service.stats.scheduled == 1 and service.stats.turns_seen == 1
    [(subject, payload, headers)] = js.published
    assert subject == subjects.timer_schedule("t1")
    assert decode_payload(payload) == TimerPayload(table_id="t1", turn=7, deadline_ms=DEADLINE_MS,
                                                   seat=3, kind="show")
    assert headers == {"Nats-Schedule": schedule_time(DEADLINE_MS),
                       "Nats-Schedule-Target": subjects.timer_fire("t1"),
                       EXPECTED_LAST_SUBJECT_SEQUENCE: "0"}


def test_of_a_message_with_several_turns_the_last_is_scheduled() -> None:
    """One commit's events: the earlier turns are over, the last one is the table's."""
    js = FakeJetStream()
    service = _service(js=js)
    msg = public(TimedOut(seat=1, turn=6, outcome="fold"), _turn(7, seat=2), Acted(seat=2, action="call", amount=20),
                 PauseStarted(turn=8, deadline_ms=DEADLINE_MS, pause_ms=500), _turn(9, seat=3),
                 PlayerLeft(seat=1, player="alice", cashed_out=100))
    asyncio.run(service._on_public(msg))
    assert msg.acked
    assert [decode_payload(p) for _, p, _ in js.published] == [
        TimerPayload(table_id="t1", turn=9, deadline_ms=DEADLINE_MS, seat=3, kind="act")]
    assert (service.stats.turns_seen, service.stats.scheduled, service.stats.superseded) == (3, 1, 2)


def test_a_message_whose_last_turn_is_older_than_the_pending_one_changes_nothing() -> None:
    """A redelivered commit: its turns were scheduled before, and a newer one since."""
    js = FakeJetStream()
    service = _service(js=js)

    async def main() -> None:
        await service._on_public(public(_turn(7), _turn(8)))
        await service._on_public(public(_turn(9)))
        await service._on_public(public(_turn(7), _turn(8)))

    asyncio.run(main())
    assert [decode_payload(p).turn for _, p, _ in js.published] == [8, 9]
    assert service.stats.turns_seen == 5 and service.stats.superseded == 3


def test_the_next_turn_replaces_the_pending_schedule_and_an_older_one_does_not() -> None:
    js = FakeJetStream()
    service = _service(js=js)

    async def main() -> None:
        for turn in (7, 8, 7):
            await service._on_public(public(_turn(turn)))

    asyncio.run(main())
    assert [decode_payload(p).turn for _, p, _ in js.published] == [7, 8]
    assert js.published[1][2][EXPECTED_LAST_SUBJECT_SEQUENCE] == "1"
    assert service.stats.superseded == 1


def test_a_schedule_written_meanwhile_by_another_instance_is_read_again() -> None:
    js = FakeJetStream(lose_races=2)
    service = _service(js=js)
    asyncio.run(service._on_public(public(_turn(7))))
    assert [decode_payload(p).turn for _, p, _ in js.published] == [7]
    assert js.published[0][2][EXPECTED_LAST_SUBJECT_SEQUENCE] == "2"


def test_events_the_timer_does_not_need_are_acked_unread() -> None:
    js = FakeJetStream()
    service = _service(js=js)
    msg = Msg(subjects.public_message("t1", event_messages.PLAIN), b"not even json",
              event_messages.headers(9, ["CardsDealt"]))
    asyncio.run(service._on_public(msg))
    assert msg.acked and not js.published and not service.stats.errors and not service.stats.turns_seen


def test_a_public_message_that_cannot_be_read_is_acked_and_counted() -> None:
    service = _service()
    msg = Msg(subjects.public_message("t1", event_messages.TURNS.token), b"not json")
    asyncio.run(service._on_public(msg))
    assert msg.acked and service.stats.errors == {BAD_EVENT: 1}


def test_a_turn_without_a_deadline_is_acked_and_counted() -> None:
    js = FakeJetStream()
    service = _service(js=js)
    msg = Msg(subjects.public_message("t1", event_messages.TURNS.token), b'[{"type":"TurnStarted","turn":3}]')
    asyncio.run(service._on_public(msg))
    assert msg.acked and not js.published and service.stats.errors == {BAD_TURN: 1}


def test_a_nats_failure_while_scheduling_leaves_the_event_for_redelivery() -> None:
    class Down(FakeJetStream):
        async def get_last_msg(self, stream: str, subject: str, direct: bool = False) -> Any:
            raise nats.errors.TimeoutError

    service = _service(js=Down())
    msg = public(_turn(7))
    asyncio.run(service._on_public(msg))
    assert not msg.acked and msg.naks == [pytest.approx(0.2)] and service.stats.retried == 1
    assert not service._locks                        # no lock left behind


@pytest.mark.parametrize("mark", [event_messages.PLAIN, event_messages.TURNS.token])
def test_a_timed_out_event_is_acked_and_left_to_the_lobby(mark: str) -> None:
    """As marked (plain), or in a message marked as holding a turn that holds none."""
    js = FakeJetStream()
    service = _service(js=js)
    msg = public(TimedOut(seat=1, turn=5, outcome="fold"))
    msg.subject = subjects.public_message("t1", mark)
    asyncio.run(service._on_public(msg))
    assert msg.acked and not js.published and not service.stats.errors and not service.stats.turns_seen


def test_the_timer_sends_as_the_service_timer_on_its_own_command_subject() -> None:
    client = table_client(SimpleNamespace())
    assert (client.role, client.name) == ("service", "timer")
    assert client.subject("t1") == subjects.command_from("service", "timer", "t1")
