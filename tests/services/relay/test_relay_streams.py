"""The relay's streams and buckets: their configuration (retention included), and how
``ensure_streams`` / ``ensure_bucket`` create them or bring them up to date (a fake
JetStream context, no server)."""

from __future__ import annotations

import argparse
import asyncio

import nats.js.errors
import pytest
from nats.js import api
from studroom.services.relay.bootstrap import add_arguments, relay_config
from studroom.services.relay.config import RelayConfig
from studroom.services.wire import dead_letters
from studroom.services.wire.subjects import DEAD_LETTER_BUCKET
from studroom.services.relay.streams import (
    ensure_bucket,
    ensure_streams,
    position_bucket,
    stream_configs,
)
from studroom.services.wire import subjects

DAY = 24 * 3600.0


class FakeJetStream:
    """Streams and buckets by name; records every change asked for."""

    def __init__(self, streams: dict[str, api.StreamConfig] | None = None, buckets: tuple[str, ...] = ()) -> None:
        self.streams = dict(streams or {}) | {f"KV_{b}": api.StreamConfig(name=f"KV_{b}") for b in buckets}
        self.buckets = set(buckets)
        self.added: list[api.StreamConfig] = []
        self.updated: list[api.StreamConfig] = []
        self.created_kv: list[api.KeyValueConfig] = []

    async def stream_info(self, name: str) -> api.StreamInfo:
        if name not in self.streams:
            raise nats.js.errors.NotFoundError
        return api.StreamInfo(config=self.streams[name], state=api.StreamState(0, 0, 0, 0, 0, 0))

    async def add_stream(self, config: api.StreamConfig) -> None:
        self.added.append(config)

    async def update_stream(self, config: api.StreamConfig) -> None:
        self.updated.append(config)

    async def key_value(self, bucket: str) -> str:
        if bucket not in self.buckets:
            raise nats.js.errors.BucketNotFoundError
        return f"kv {bucket}"

    async def create_key_value(self, config: api.KeyValueConfig) -> str:
        self.created_kv.append(config)
        self.streams[f"KV_{config.bucket}"] = api.StreamConfig(name=f"KV_{config.bucket}", max_bytes=config.max_bytes,
                                                              max_msg_size=config.max_value_size)
        return f"new kv {config.bucket}"


def test_a_public_and_a_private_stream_on_file_storage_with_the_dedupe_window() -> None:
    public, private = stream_configs(RelayConfig(duplicate_window=30.0, replicas=3))
    assert (public.name, public.subjects) == (subjects.PUBLIC_STREAM, ["studroom.pub.>"])
    assert (private.name, private.subjects) == (subjects.PRIVATE_STREAM, ["studroom.priv.>"])
    for config in (public, private):
        assert config.storage == api.StorageType.FILE
        assert config.retention == api.RetentionPolicy.LIMITS
        assert config.discard == api.DiscardPolicy.OLD
        assert config.duplicate_window == 30.0
        assert config.num_replicas == 3
        assert config.allow_direct is True


def test_private_copies_are_kept_a_day_and_public_views_a_week_by_default() -> None:
    public, private = stream_configs(RelayConfig())
    assert private.max_age == DAY
    assert public.max_age == 7 * DAY


def test_the_dedupe_window_is_never_longer_than_the_max_age() -> None:
    public, private = stream_configs(RelayConfig(duplicate_window=120.0, private_max_age=2.0, public_max_age=60.0))
    assert (private.max_age, private.duplicate_window) == (2.0, 2.0)
    assert (public.max_age, public.duplicate_window) == (60.0, 60.0)


def test_missing_streams_are_created() -> None:
    js = FakeJetStream()
    asyncio.run(ensure_streams(js, RelayConfig(replicas=3)))
    assert js.added == stream_configs(RelayConfig(replicas=3))
    assert js.updated == []


def test_streams_as_wanted_are_left_alone() -> None:
    config = RelayConfig()
    js = FakeJetStream({c.name: c for c in stream_configs(config)})
    asyncio.run(ensure_streams(js, config))
    assert js.added == js.updated == []


def test_a_stream_that_drifted_is_updated_keeping_its_extra_subjects() -> None:
    config = RelayConfig(duplicate_window=120.0)
    public, private = stream_configs(config)
    drifted = api.StreamConfig(name=public.name, subjects=["studroom.pub.>", "legacy.>"],
                               duplicate_window=5.0, allow_direct=False)
    js = FakeJetStream({public.name: drifted, private.name: private})
    asyncio.run(ensure_streams(js, config))
    [updated] = js.updated
    assert updated.name == public.name
    assert sorted(updated.subjects) == ["legacy.>", "studroom.pub.>"]
    assert updated.duplicate_window == 120.0 and updated.allow_direct is True
    assert updated.max_age == config.public_max_age
    assert js.added == []


def test_a_private_stream_created_without_retention_gets_it() -> None:
    config = RelayConfig(private_max_age=3600.0)
    public, private = stream_configs(config)
    forever = private.evolve(max_age=None)
    js = FakeJetStream({public.name: public, private.name: forever})
    asyncio.run(ensure_streams(js, config))
    [updated] = js.updated
    assert (updated.name, updated.max_age) == (subjects.PRIVATE_STREAM, 3600.0)


def test_the_buckets_of_positions_and_dead_letters() -> None:
    config = RelayConfig(replicas=3)
    positions, dead = position_bucket(config), dead_letters.bucket_config(3)
    assert (positions.bucket, dead.bucket) == (subjects.RELAY_BUCKET, DEAD_LETTER_BUCKET)
    for bucket in (positions, dead):
        assert (bucket.history, bucket.replicas, bucket.storage) == (1, 3, api.StorageType.FILE)
        assert bucket.max_bytes and bucket.max_value_size and bucket.max_bytes > 100 * bucket.max_value_size
    assert not positions.ttl                                  # kept until deleted
    assert dead.ttl == 7 * DAY                                # as long as the streams keep their messages


def test_a_missing_bucket_is_created_an_existing_one_used_and_bounded() -> None:
    config = RelayConfig()
    js = FakeJetStream(buckets=(subjects.RELAY_BUCKET,))
    assert asyncio.run(ensure_bucket(js, position_bucket(config))) == f"kv {subjects.RELAY_BUCKET}"
    [bounded] = js.updated                                    # made before the bounds: brought up to date
    assert (bounded.name, bounded.max_bytes) == (f"KV_{subjects.RELAY_BUCKET}", position_bucket(config).max_bytes)
    assert asyncio.run(ensure_bucket(js, dead_letters.bucket_config())) == f"new kv {DEAD_LETTER_BUCKET}"
    assert js.created_kv == [dead_letters.bucket_config()]


def _options(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_serve_relay_keeps_down_cards_a_day_unless_told_otherwise() -> None:
    assert relay_config(_options()).private_max_age == DAY
    config = relay_config(_options("--private-max-age", "3600", "--public-max-age", "86400"))
    assert (config.private_max_age, config.public_max_age) == (3600.0, DAY)


@pytest.mark.parametrize("option", ["--private-max-age", "--public-max-age"])
def test_a_retention_of_zero_is_a_usage_error(option: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        _options(option, "0")
    assert exit_.value.code == 2


def test_the_streams_keep_at_most_their_max_bytes_by_default_and_as_told() -> None:
    public, private = stream_configs(relay_config(_options()))
    assert (public.max_bytes, private.max_bytes) == (4 << 30, 1 << 30)
    config = relay_config(_options("--public-max-bytes", "1000000", "--private-max-bytes", "2000"))
    assert (config.public_max_bytes, config.private_max_bytes) == (1_000_000, 2000)
