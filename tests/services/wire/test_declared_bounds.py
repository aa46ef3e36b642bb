"""Every bucket and stream the room declares is bounded (issue 16), on a real JetStream:
the lobby's bucket (its tables times its largest entry), the relay's positions, the
timer's stream, the partition leases (the dead letters: test_dead_letters.py); one made
before the bounds gets them when its service starts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import nats
import pytest
from nats.js.api import DiscardPolicy, StreamConfig
from studroom.projections.lobby import jetstream as lobby
from studroom.services.relay.config import RelayConfig
from studroom.services.relay.streams import ensure_bucket, position_bucket
from studroom.services.table.partitions import LEASE_MAX_BYTES, LEASE_MAX_VALUE, LeaseManager
from studroom.services.timer.streams import TIMER_MAX_SIZE, TIMERS_MAX_BYTES, ensure_timer_stream
from studroom.services.wire import subjects

pytestmark = pytest.mark.integration

UNBOUNDED = {"max_bytes": -1, "max_msg_size": -1}


async def _declared_twice(js: Any, declare: Callable[[], Awaitable[Any]], stream: str) -> StreamConfig:
    """Declare, take the bounds away (an older version's stream), declare again: the
    stream's config then."""
    await declare()
    await js.update_stream((await js.stream_info(stream)).config.evolve(**UNBOUNDED))
    await declare()
    return (await js.stream_info(stream)).config


def _run(nats_url: str, check: Callable[[Any], Awaitable[None]]) -> None:
    async def main() -> None:
        nc = await nats.connect(nats_url)
        try:
            await check(nc.jetstream())
        finally:
            await nc.close()

    asyncio.run(main())


def test_the_lobby_s_bucket_holds_its_tables_at_their_largest(nats_url: str) -> None:
    async def check(js: Any) -> None:
        config = await _declared_twice(js, lambda: lobby.ensure_bucket(js), f"KV_{lobby.LOBBY_BUCKET}")
        assert (config.max_msg_size, config.max_bytes) == (lobby.MAX_ENTRY, lobby.MAX_TABLES * lobby.MAX_ENTRY)
        assert config.max_msgs_per_subject == 1 and config.discard == DiscardPolicy.NEW

    _run(nats_url, check)


def test_the_relay_s_positions_are_bounded(nats_url: str) -> None:
    async def check(js: Any) -> None:
        bucket = position_bucket(RelayConfig())
        config = await _declared_twice(js, lambda: ensure_bucket(js, bucket), f"KV_{subjects.RELAY_BUCKET}")
        assert (config.max_msg_size, config.max_bytes) == (bucket.max_value_size, bucket.max_bytes)

    _run(nats_url, check)


def test_the_timer_s_stream_is_bounded(nats_url: str) -> None:
    async def check(js: Any) -> None:
        config = await _declared_twice(js, lambda: ensure_timer_stream(js), subjects.TIMER_STREAM)
        assert (config.max_msg_size, config.max_bytes) == (TIMER_MAX_SIZE, TIMERS_MAX_BYTES)

    _run(nats_url, check)


def test_the_leases_are_bounded_and_keep_their_ttl(nats_url: str) -> None:
    async def nothing(*_: Any) -> None:
        pass

    async def check(js: Any) -> None:
        bucket = "test_bounded_leases"
        leases = LeaseManager(js, "bounds", bucket=bucket, ttl=2.0, on_acquire=nothing, on_release=nothing)
        config = await _declared_twice(js, leases._ensure_bucket, f"KV_{bucket}")
        assert (config.max_msg_size, config.max_bytes, config.max_age) == (LEASE_MAX_VALUE, LEASE_MAX_BYTES, 2.0)
        await js.delete_key_value(bucket)

    _run(nats_url, check)
