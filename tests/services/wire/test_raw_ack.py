"""Acknowledgements written straight to the connection (``wire/raw.py``), on a real NATS
server: each message is acknowledged on its own, as ``msg.ack()`` would (the consumer
has none pending, none comes again), and the delivery's reply subject reads as
nats-py's ``metadata`` reads it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import nats
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from studroom.services.wire import raw
from studroom.services.wire.pull import delivery, stamp_ms


class Counted:
    """A message whose ``ack`` is nats-py's, counted (what a stand-in connection uses)."""

    def __init__(self, msg: Any) -> None:
        self.msg, self.reply, self.acks = msg, msg.reply, 0

    async def ack(self) -> None:
        self.acks += 1
        await self.msg.ack()


def test_raw_acks_acknowledge_each_message_as_msg_ack_does(nats_url: str) -> None:
    async def scenario() -> None:
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        stream = f"RAWACK_{uuid.uuid4().hex[:8]}"
        try:
            await js.add_stream(StreamConfig(name=stream, subjects=[f"{stream.lower()}.>"]))
            for n in range(6):
                await js.publish(f"{stream.lower()}.t{n % 2}", b"%d" % n)
            await js.add_consumer(stream, ConsumerConfig(durable_name="c", ack_policy=AckPolicy.EXPLICIT,
                                                         ack_wait=30))
            sub = await js.pull_subscribe_bind("c", stream)
            msgs = await sub.fetch(6, timeout=5)
            assert len(msgs) == 6
            for msg in msgs:                          # the reply subject as nats-py reads it
                known = delivery(msg)
                assert known is not None
                assert (known.delivered, known.seq) == (msg.metadata.num_delivered, msg.metadata.sequence.stream)
                assert stamp_ms(msg) == int(msg.metadata.timestamp.timestamp() * 1000)

            before = nc.stats["out_msgs"]
            counted = [Counted(m) for m in msgs[:2]]
            await raw.ack(object(), counted)          # no nats-py connection: msg.ack() each
            assert [c.acks for c in counted] == [1, 1]
            await raw.ack(nc, msgs[2:])               # written raw, flushed once
            assert nc.stats["out_msgs"] - before == 6
            await nc.flush()

            info = await js.consumer_info(stream, "c")
            assert info.num_ack_pending == 0 and info.ack_floor.stream_seq == 6
            assert info.num_redelivered == 0
        finally:
            await js.delete_stream(stream)
            await nc.close()

    asyncio.run(scenario())
