"""Poison never wedges a consumer (issue 12), on a real JetStream: a message the handler
cannot handle, or that comes too often, is recorded in KV bucket studroom_dead_letters
and acknowledged after a bounded number of deliveries, and the messages after it are
handled."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats
import pytest
from nats.js.api import StreamConfig
from studroom.services.wire.dead_letters import DEAD_LETTER_BUCKET
from studroom.services.wire.declared import ensure_consumer, ensure_stream
from studroom.services.wire.pull import PullLoop, shared_consumer

pytestmark = pytest.mark.integration

STREAM = "TEST_POISON"
CONSUMER = "test_poison"
MAX_DELIVERIES = 3


async def _run(nats_url: str, bodies: list[bytes]) -> tuple[list[bytes], dict[str, Any], Any, PullLoop]:
    """Publish ``bodies``, pull them until the last good one and every poison are done."""
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    try:
        await js.delete_stream(STREAM)
    except nats.js.errors.NotFoundError:
        pass
    await ensure_stream(js, StreamConfig(name=STREAM, subjects=["test.poison.*"]))
    await ensure_consumer(js, STREAM, shared_consumer(CONSUMER, "test.poison.*", 2.0, "test"))
    handled: list[bytes] = []
    done = asyncio.Event()

    async def handler(msg: Any) -> None:
        if msg.data == b"bad":
            raise ValueError("year 3170843 is out of range")      # the action_seconds 10^14 timer
        if msg.data == b"slow":
            raise TimeoutError                                    # looks like an outage, every time
        handled.append(msg.data)
        await msg.ack()
        if msg.data == b"last":
            done.set()

    for i, body in enumerate(bodies):
        await js.publish(f"test.poison.{i}", body)
    stop = asyncio.Event()
    loop = PullLoop(nc, STREAM, CONSUMER, handler, max_deliveries=MAX_DELIVERIES, heartbeat=0.5)
    runner = asyncio.create_task(loop.run(stop))
    try:
        await asyncio.wait_for(done.wait(), 10)
        for _ in range(100):                                  # the slow one: a few back-offs
            if loop._dead_letters is not None and loop._dead_letters.recorded == bodies.count(b"bad") + bodies.count(
                    b"slow"):
                break
            await asyncio.sleep(0.1)
        for _ in range(50):                                   # the last acknowledgement on its way
            info = await js.consumer_info(STREAM, CONSUMER)
            if not info.num_ack_pending:
                break
            await asyncio.sleep(0.1)
        kv = await js.key_value(DEAD_LETTER_BUCKET)
        letters = {}
        for i, body in enumerate(bodies, start=1):
            if body in (b"bad", b"slow"):
                letters[body.decode()] = json.loads((await kv.get(f"{STREAM}.{CONSUMER}.{i}")).value)
    finally:
        stop.set()
        await runner
        await loop.drain()
        await nc.close()
    return handled, letters, info, loop


def test_poison_is_set_aside_acknowledged_and_the_next_message_handled(nats_url: str) -> None:
    bodies = [b"first", b"bad", b"second", b"slow", b"last"]
    handled, letters, info, loop = asyncio.run(_run(nats_url, bodies))
    assert handled == [b"first", b"second", b"last"]
    assert letters["bad"]["delivered"] == 1                   # not an outage: set aside at once
    assert letters["bad"]["reason"] == "ValueError: year 3170843 is out of range"
    assert (letters["bad"]["stream"], letters["bad"]["consumer"], letters["bad"]["seq"]) == (STREAM, CONSUMER, 2)
    assert letters["bad"]["body"] == "bad"
    assert letters["slow"]["delivered"] == MAX_DELIVERIES + 1  # asked for again MAX_DELIVERIES times
    assert letters["slow"]["reason"] == f"delivered {MAX_DELIVERIES + 1} times, never acknowledged"
    assert loop.dead_letters.recorded == 2
    assert (info.num_ack_pending, info.num_pending, info.num_redelivered) == (0, 0, 0)
