"""The generic JetStream pull loop and its redelivery back-off, without servers (a fake
NATS connection records the pull requests and hands messages to the loop)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from studroom.services.wire.pull import (
    LAST_RETRY,
    PullLoop,
    backoff,
    delivered,
    retry_later,
    stamp_ms,
)

NEXT = "$JS.API.CONSUMER.MSG.NEXT.S.C"


# ----------------------------------------------------------------------- back-off


@pytest.mark.parametrize(("times", "delay"), [(1, 0.2), (2, 0.4), (3, 0.8), (4, 1.6), (5, 3.2),
                                              (6, 5.0), (50, 5.0)])
def test_the_redelivery_delay_doubles_from_a_fifth_of_a_second_up_to_five(times: int, delay: float) -> None:
    assert backoff(times) == pytest.approx(delay)
    assert LAST_RETRY == 5.0


def ack_subject(num_delivered: int, seq: int = 7, stamp: datetime | None = None) -> str:
    """A JetStream delivery's reply subject (as the server writes it)."""
    stored = datetime(2026, 11, 29, tzinfo=UTC) if stamp is None else stamp
    return f"$JS.ACK.S.C.{num_delivered}.{seq}.{seq}.{round(stored.timestamp() * 1e6) * 1000}.0"


class FakeMsg:
    def __init__(self, num_delivered: int | None = None, stamp: datetime | None = None,
                 headers: dict[str, str] | None = None, reply: str = "", data: bytes = b"") -> None:
        if num_delivered is not None or stamp is not None:
            reply = ack_subject(num_delivered or 0, stamp=stamp)
        self.headers = headers
        self.reply = reply
        self.data = data
        self.naks: list[float] = []

    async def nak(self, delay: float | None = None) -> None:
        self.naks.append(delay if delay is not None else -1)


def test_delivered_counts_the_servers_deliveries_and_one_for_a_plain_message() -> None:
    assert delivered(FakeMsg(num_delivered=4)) == 4
    assert delivered(FakeMsg(num_delivered=0)) == 1
    assert delivered(FakeMsg()) == 1                 # core NATS: no JetStream metadata


def test_retry_later_naks_with_the_delay_of_the_messages_delivery_count() -> None:
    msg = FakeMsg(num_delivered=3)
    asyncio.run(retry_later(msg))
    assert msg.naks == [pytest.approx(0.8)]


def test_a_lost_nak_is_no_error() -> None:
    class Disconnected(FakeMsg):
        async def nak(self, delay: float | None = None) -> None:
            raise ConnectionError("gone")

    asyncio.run(retry_later(Disconnected(num_delivered=1)))   # the server redelivers anyway


def test_stamp_ms_is_when_jetstream_stored_the_message() -> None:
    stored = datetime(2026, 11, 29, 12, 0, 0, 250_000, tzinfo=UTC)
    assert stamp_ms(FakeMsg(num_delivered=1, stamp=stored)) == int(stored.timestamp() * 1000)
    assert stamp_ms(FakeMsg()) is None


# ------------------------------------------------------------------------ pull loop


class FakeNats:
    def __init__(self) -> None:
        self.published: list[tuple[str, bytes, str | None]] = []
        self.deliver: Any = None
        self.requested = asyncio.Event()

    def new_inbox(self) -> str:
        return "_INBOX.test"

    async def subscribe(self, subject: str, cb: Any) -> Any:
        self.deliver = cb

        async def unsubscribe() -> None:
            self.deliver = None

        return SimpleNamespace(unsubscribe=unsubscribe)

    async def publish(self, subject: str, data: bytes, reply: str | None = None) -> None:
        self.published.append((subject, data, reply))
        if subject == NEXT:
            self.requested.set()

    def pull_requests(self) -> list[dict[str, int]]:
        return [json.loads(data) for subject, data, _ in self.published if subject == NEXT]


async def _noop(msg: Any) -> None:
    return None


def test_a_pull_request_asks_for_a_batch_with_expiry_and_heartbeats_in_nanoseconds() -> None:
    nc = FakeNats()
    handled: list[bytes] = []
    got = asyncio.Event()

    async def handler(msg: Any) -> None:
        handled.append(msg.data)
        got.set()

    async def main() -> None:
        stop = asyncio.Event()
        loop = PullLoop(nc, "S", "C", handler, max_inflight=100, batch=256, expires=5.0, heartbeat=1.0)
        runner = asyncio.create_task(loop.run(stop))
        await asyncio.wait_for(nc.requested.wait(), 2)
        assert loop.requested == 100
        await nc.deliver(FakeMsg(data=b"one"))
        await asyncio.wait_for(got.wait(), 2)
        stop.set()
        await asyncio.wait_for(runner, 2)
        await loop.drain()
        assert loop.requested == 99 and loop.handling == 0

    asyncio.run(main())
    assert nc.pull_requests()[0] == {"batch": 100, "expires": 5_000_000_000, "idle_heartbeat": 1_000_000_000}
    assert nc.published[0][2] == "_INBOX.test"
    assert handled == [b"one"]
    assert nc.deliver is None                        # unsubscribed at the end


def test_an_idle_heartbeat_is_answered_when_it_asks_for_flow_control() -> None:
    nc = FakeNats()
    loop = PullLoop(nc, "S", "C", _noop)
    asyncio.run(loop._on_msg(FakeMsg(headers={"Status": "100"}, reply="$JS.FC.x")))
    asyncio.run(loop._on_msg(FakeMsg(headers={"Status": "100"})))
    assert nc.published == [("$JS.FC.x", b"", None)]


def test_an_expired_request_gives_back_the_messages_it_did_not_deliver() -> None:
    loop = PullLoop(FakeNats(), "S", "C", _noop)
    loop.requested = 300
    asyncio.run(loop._on_msg(FakeMsg(headers={"Status": "408", "Nats-Pending-Messages": "120"})))
    assert loop.requested == 180
    asyncio.run(loop._on_msg(FakeMsg(headers={"Status": "409", "Description": "Exceeded MaxWaiting"})))
    assert loop.requested == 0 and not loop._reset


@pytest.mark.parametrize("headers", [{"Status": "409", "Description": "Consumer Deleted"},
                                     {"Status": "503"}])
def test_a_deleted_or_missing_consumer_makes_the_loop_start_again(headers: dict[str, str]) -> None:
    loop = PullLoop(FakeNats(), "S", "C", _noop)
    loop.requested = 10
    asyncio.run(loop._on_msg(FakeMsg(headers=headers)))
    assert loop._reset and loop.requested == 0


def test_a_deleted_consumer_is_recreated_before_pulling_again() -> None:
    nc = FakeNats()
    recreated = asyncio.Event()

    async def recreate() -> None:
        recreated.set()

    async def main() -> None:
        stop = asyncio.Event()
        loop = PullLoop(nc, "S", "C", _noop, max_inflight=8, heartbeat=0.05, recreate=recreate)
        runner = asyncio.create_task(loop.run(stop))
        await asyncio.wait_for(nc.requested.wait(), 2)
        nc.requested.clear()
        await nc.deliver(FakeMsg(headers={"Status": "409", "Description": "Consumer Deleted"}))
        await asyncio.wait_for(recreated.wait(), 2)
        await asyncio.wait_for(nc.requested.wait(), 2)
        stop.set()
        await asyncio.wait_for(runner, 2)

    asyncio.run(main())
    assert len(nc.pull_requests()) == 2


# ------------------------------------------------------------------ dead letters


class FakeDeadLetters:
    """Records letters by key (``fail``: NATS is away)."""

    def __init__(self, fail: bool = False) -> None:
        self.letters: dict[str, Any] = {}
        self.fail = fail

    async def record(self, letter: Any) -> bool:
        if self.fail:
            raise ConnectionError("NATS away")
        new = letter.key not in self.letters
        self.letters.setdefault(letter.key, letter)
        return new


class AckedMsg(FakeMsg):
    def __init__(self, num_delivered: int, seq: int = 7, data: bytes = b"x") -> None:
        super().__init__(data=data, reply=ack_subject(num_delivered, seq))
        self.metadata = SimpleNamespace(sequence=SimpleNamespace(stream=seq))
        self.subject = "studroom.pub.t1"
        self.acks = 0

    async def ack(self) -> None:
        self.acks += 1


async def handled(loop: PullLoop, msg: Any) -> None:
    """Hand ``msg`` to the loop's handler as a delivery does, and wait until it is handled."""
    loop.handling += 1
    loop._start(msg)
    await loop.drain()


def _handle(handler: Any, msg: AckedMsg, dead: FakeDeadLetters, max_deliveries: int = 5) -> PullLoop:
    async def main() -> PullLoop:
        loop = PullLoop(FakeNats(), "STUDROOM_PUBLIC", "C", handler, max_deliveries=max_deliveries,
                        dead_letters=dead)  # type: ignore[arg-type]
        await handled(loop, msg)
        return loop

    loop = asyncio.run(main())
    assert loop.handling == 0
    return loop


async def _poison(msg: Any) -> None:
    raise ValueError("year 3170843 is out of range")


def test_a_message_the_handler_cannot_handle_is_set_aside_and_acknowledged_at_once() -> None:
    dead, msg = FakeDeadLetters(), AckedMsg(num_delivered=1, data=b'{"deadline_ms": 100000000000000}')
    _handle(_poison, msg, dead)
    [letter] = dead.letters.values()
    assert letter.key == "STUDROOM_PUBLIC.C.7"
    assert (letter.stream, letter.consumer, letter.seq, letter.subject, letter.delivered) == (
        "STUDROOM_PUBLIC", "C", 7, "studroom.pub.t1", 1)
    assert letter.reason == "ValueError: year 3170843 is out of range"
    assert letter.body == '{"deadline_ms": 100000000000000}'
    assert msg.acks == 1 and msg.naks == []


def test_an_outage_is_asked_for_again_until_the_message_came_too_often() -> None:
    async def away(msg: Any) -> None:
        raise TimeoutError

    dead = FakeDeadLetters()
    for times in range(1, 6):
        msg = AckedMsg(num_delivered=times)
        _handle(away, msg, dead)
        assert msg.naks == [pytest.approx(backoff(times))] and msg.acks == 0
    assert dead.letters == {}
    handled: list[Any] = []

    async def handler(msg: Any) -> None:
        handled.append(msg)

    last = AckedMsg(num_delivered=6)
    _handle(handler, last, dead)                    # the sixth delivery of five allowed: not handled
    assert handled == [] and last.acks == 1
    assert dead.letters["STUDROOM_PUBLIC.C.7"].reason == "delivered 6 times, never acknowledged"


def test_a_private_copys_body_is_never_recorded() -> None:
    dead = FakeDeadLetters()

    async def main() -> None:
        loop = PullLoop(FakeNats(), "STUDROOM_PRIVATE", "C", _poison, dead_letters=dead)  # type: ignore[arg-type]
        await handled(loop, AckedMsg(num_delivered=1, data=b'{"cards": ["As"]}'))

    asyncio.run(main())
    [letter] = dead.letters.values()
    assert letter.body is None


def test_a_letter_that_cannot_be_recorded_now_leaves_its_message_for_later() -> None:
    msg = AckedMsg(num_delivered=2)
    _handle(_poison, msg, FakeDeadLetters(fail=True))
    assert msg.acks == 0 and msg.naks == [pytest.approx(backoff(2))]


def test_a_message_handled_wakes_the_loop_only_when_the_next_pull_request_may_be_sent() -> None:
    """Issue 20: a wake-up per message handled cost the loop a round of its own for
    nothing while the open pull requests still had room."""
    loop = PullLoop(FakeNats(), "S", "C", _noop, max_inflight=4, batch=2)
    loop.requested, loop.handling = 3, 0
    asyncio.run(handled(loop, FakeMsg(data=b"x")))
    assert not loop._wake.is_set()                   # 1 free, 3 still asked for: nothing to ask
    loop.requested, loop.handling = 2, 0
    asyncio.run(handled(loop, FakeMsg(data=b"y")))
    assert loop._wake.is_set()                       # room for a batch: ask


def test_a_handler_may_answer_with_a_future_of_its_own_and_no_task_is_made_for_it() -> None:
    """Issue 20: the lobby's handler puts the message in its table's lane and returns the
    lane's future; the loop watches it as it is, and answers its failure as a task's."""
    dead = FakeDeadLetters()

    async def main() -> tuple[AckedMsg, AckedMsg, AckedMsg, AckedMsg]:
        futures: list[asyncio.Future[None]] = []

        def handler(msg: Any) -> asyncio.Future[None]:
            if msg.data == b"raises":
                raise ValueError("not even a future")
            futures.append(asyncio.get_running_loop().create_future())
            return futures[-1]

        loop = PullLoop(FakeNats(), "STUDROOM_PUBLIC", "C", handler, dead_letters=dead)  # type: ignore[arg-type]
        ok, away, bad = AckedMsg(1, seq=1), AckedMsg(1, seq=2), AckedMsg(1, seq=3)
        for msg in (ok, away, bad):
            loop.handling += 1
            loop._start(msg)
        assert loop.handling == 3 and loop._tasks == set(futures)       # nothing but the handler's futures
        futures[0].set_result(None)
        futures[1].set_exception(TimeoutError())
        futures[2].set_exception(ValueError("bad"))
        raises = AckedMsg(1, seq=4, data=b"raises")
        await handled(loop, raises)
        assert loop.handling == 0 and not loop._tasks
        return ok, away, bad, raises

    ok, away, bad, raises = asyncio.run(main())
    assert (ok.acks, ok.naks) == (0, [])                  # the handler acknowledges its own
    assert (away.acks, away.naks) == (0, [pytest.approx(backoff(1))])
    assert (bad.acks, raises.acks) == (1, 1)
    assert sorted(dead.letters) == ["STUDROOM_PUBLIC.C.3", "STUDROOM_PUBLIC.C.4"]
    assert dead.letters["STUDROOM_PUBLIC.C.4"].reason == "ValueError: not even a future"
