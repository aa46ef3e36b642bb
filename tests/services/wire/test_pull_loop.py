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


class FakeMsg:
    def __init__(self, num_delivered: int | None = None, stamp: datetime | None = None,
                 headers: dict[str, str] | None = None, reply: str = "", data: bytes = b"") -> None:
        if num_delivered is not None or stamp is not None:
            self.metadata = SimpleNamespace(num_delivered=num_delivered, timestamp=stamp)
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


def test_a_failing_handler_leaves_the_message_for_redelivery_and_the_loop_running() -> None:
    nc = FakeNats()

    async def handler(msg: Any) -> None:
        raise RuntimeError("boom")

    async def main() -> PullLoop:
        loop = PullLoop(nc, "S", "C", handler)
        await loop._on_msg(FakeMsg(data=b"x"))
        await loop.drain()
        return loop

    loop = asyncio.run(main())
    assert loop.handling == 0
