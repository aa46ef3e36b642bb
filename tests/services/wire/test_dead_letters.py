"""Poison never wedges a consumer (issue 12), on a real JetStream: a message the handler
cannot handle, or that comes too often, is recorded in KV bucket studroom_dead_letters
and acknowledged after a bounded number of deliveries, and the messages after it are
handled.  The bucket is bounded (issue 16): its size, a record's size, a record's age;
an oversize record is cut and still says where and why; a value put first under a
letter's key does not keep the letter out."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
import nats
import pytest
from nats.js.api import DiscardPolicy, StreamConfig
from studroom.services.wire.dead_letters import (
    DEAD_LETTER_BUCKET,
    KEPT_FOR,
    MAX_BYTES,
    MAX_RECORD,
    Undelivered,
    open_bucket,
    set_aside,
)
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


# ------------------------------------------------------------------------------ bounds


def _letter(seq: int, body: str | None = "x", delivered: int = 1) -> Undelivered:
    return Undelivered(STREAM, CONSUMER, seq, "studroom.cashier.player.mallory", delivered, "ValueError: bad", body)


def test_the_bucket_is_bounded_and_a_bucket_made_before_the_bounds_gets_them(nats_url: str) -> None:
    async def main() -> Any:
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        try:
            await open_bucket(js)
            stream = f"KV_{DEAD_LETTER_BUCKET}"
            have = (await js.stream_info(stream)).config                 # as an older version made it:
            await js.update_stream(have.evolve(max_bytes=-1, max_msg_size=-1, max_age=0,
                                               discard=DiscardPolicy.NEW))
            await open_bucket(js)
            return (await js.stream_info(stream)).config
        finally:
            await nc.close()

    config = asyncio.run(main())
    assert (config.max_bytes, config.max_msg_size, config.discard) == (MAX_BYTES, MAX_RECORD, DiscardPolicy.OLD)
    assert config.max_age == KEPT_FOR == 7 * 24 * 3600


def test_an_oversize_letter_is_cut_and_still_says_where_and_why(nats_url: str) -> None:
    huge = "\x01" * 50_000                     # each one "\u0001" in JSON: six bytes
    letter = _letter(10_000_001, huge)

    async def main() -> bytes:
        nc = await nats.connect(nats_url)
        try:
            kv = await open_bucket(nc.jetstream())
            assert await set_aside(kv, letter)
            return (await kv.get(letter.key)).value
        finally:
            await nc.close()

    stored = asyncio.run(main())
    record = json.loads(stored)
    assert len(stored) <= MAX_RECORD < len(msgspec.json.encode(letter))
    assert (record["subject"], record["reason"], record["seq"]) == (letter.subject, letter.reason, letter.seq)
    assert record["body"].startswith("\x01") and record["body"].endswith("(50000 characters)")


def test_a_value_put_first_under_a_letter_s_key_is_replaced(nats_url: str) -> None:
    """A key is where the message is (stream, consumer, sequence); a value someone put
    there first (a reply aimed at the bucket, say) does not keep the letter out."""
    letter = _letter(10_000_002)

    async def main() -> tuple[bool, bool, bytes]:
        nc = await nats.connect(nats_url)
        try:
            kv = await open_bucket(nc.jetstream())
            await kv.put(letter.key, b'{"ok": false, "error": {"code": "unknown_account"}}')
            first = await set_aside(kv, letter)
            again = await set_aside(kv, _letter(letter.seq, delivered=2))     # the same message, delivered again
            return first, again, (await kv.get(letter.key)).value
        finally:
            await nc.close()

    first, again, stored = asyncio.run(main())
    assert first and not again
    assert msgspec.json.decode(stored, type=Undelivered) == letter
