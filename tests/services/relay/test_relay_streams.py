"""The relay's streams and bucket: their configuration, and how ``ensure_streams``
creates them or brings them up to date (a fake JetStream context, no server)."""

from __future__ import annotations

import asyncio
from typing import Any

import nats.js.errors
from nats.js import api
from studroom.services.relay.config import RelayConfig
from studroom.services.relay.streams import ensure_streams, stream_configs
from studroom.services.wire import subjects


class FakeJetStream:
    """Streams and buckets by name; records every change asked for."""

    def __init__(self, streams: dict[str, api.StreamConfig] | None = None, bucket: bool = False) -> None:
        self.streams = dict(streams or {})
        self.bucket = bucket
        self.added: list[api.StreamConfig] = []
        self.updated: list[api.StreamConfig] = []
        self.created_kv: dict[str, Any] | None = None

    async def stream_info(self, name: str) -> api.StreamInfo:
        if name not in self.streams:
            raise nats.js.errors.NotFoundError
        return api.StreamInfo(config=self.streams[name], state=api.StreamState(0, 0, 0, 0, 0, 0))

    async def add_stream(self, config: api.StreamConfig) -> None:
        self.added.append(config)

    async def update_stream(self, config: api.StreamConfig) -> None:
        self.updated.append(config)

    async def key_value(self, bucket: str) -> str:
        if not self.bucket:
            raise nats.js.errors.BucketNotFoundError
        return f"kv {bucket}"

    async def create_key_value(self, **options: Any) -> str:
        self.created_kv = options
        return f"new kv {options['bucket']}"


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


def test_missing_streams_and_bucket_are_created() -> None:
    js = FakeJetStream()
    kv = asyncio.run(ensure_streams(js, RelayConfig(replicas=3)))
    assert js.added == stream_configs(RelayConfig(replicas=3))
    assert js.updated == []
    assert kv == f"new kv {subjects.RELAY_BUCKET}"
    assert js.created_kv is not None
    assert (js.created_kv["bucket"], js.created_kv["history"], js.created_kv["replicas"]) == (subjects.RELAY_BUCKET, 1, 3)
    assert js.created_kv["storage"] == api.StorageType.FILE and js.created_kv["direct"] is True


def test_streams_as_wanted_are_left_alone() -> None:
    config = RelayConfig()
    js = FakeJetStream({c.name: c for c in stream_configs(config)}, bucket=True)
    assert asyncio.run(ensure_streams(js, config)) == f"kv {subjects.RELAY_BUCKET}"
    assert js.added == js.updated == []
    assert js.created_kv is None


def test_a_stream_that_drifted_is_updated_keeping_its_extra_subjects() -> None:
    config = RelayConfig(duplicate_window=120.0)
    public, private = stream_configs(config)
    drifted = api.StreamConfig(name=public.name, subjects=["studroom.pub.>", "legacy.>"],
                               duplicate_window=5.0, allow_direct=False)
    js = FakeJetStream({public.name: drifted, private.name: private}, bucket=True)
    asyncio.run(ensure_streams(js, config))
    [updated] = js.updated
    assert updated.name == public.name
    assert updated.subjects == ["legacy.>", "studroom.pub.>"]
    assert updated.duplicate_window == 120.0 and updated.allow_direct is True
    assert js.added == []
