"""The relay's JetStream streams (public views, private copies) and its KV bucket of
positions: their configuration, created or brought up to date at every connection.
Durability (replicas, fsync): docs/design/relay.md."""

from __future__ import annotations

from typing import Any

import nats.js.errors
from nats.js import api
from ..wire import subjects
from .config import RelayConfig


def stream_configs(config: RelayConfig) -> list[api.StreamConfig]:
    """The public and the private stream."""
    common: dict[str, Any] = {
        "storage": api.StorageType.FILE,
        "retention": api.RetentionPolicy.LIMITS,
        "discard": api.DiscardPolicy.OLD,
        "duplicate_window": config.duplicate_window,
        "num_replicas": config.replicas,
        "allow_direct": True,
    }
    return [
        api.StreamConfig(
            name=subjects.PUBLIC_STREAM,
            subjects=[subjects.all_public_events()],
            description="Studroom: public view of every table event (written by the relay)",
            **common,
        ),
        api.StreamConfig(
            name=subjects.PRIVATE_STREAM,
            subjects=[subjects.all_private_events()],
            description="Studroom: each player's private copies (written by the relay)",
            **common,
        ),
    ]


async def ensure_streams(js: Any, config: RelayConfig = RelayConfig()) -> Any:
    """Create (or bring up to date) the relay's streams and KV bucket; return the KV."""
    for wanted in stream_configs(config):
        try:
            info = await js.stream_info(wanted.name)
        except nats.js.errors.NotFoundError:
            await js.add_stream(wanted)
            continue
        have = info.config
        subjects_ = sorted(set(have.subjects or []) | set(wanted.subjects or []))
        window = have.duplicate_window or 0
        if (
            subjects_ != sorted(have.subjects or [])
            or abs(window - config.duplicate_window) > 1e-3
            or not have.allow_direct
        ):
            await js.update_stream(
                have.evolve(
                    subjects=subjects_,
                    duplicate_window=config.duplicate_window,
                    allow_direct=True,
                )
            )
    try:
        return await js.key_value(subjects.RELAY_BUCKET)
    except nats.js.errors.BucketNotFoundError:
        return await js.create_key_value(
            bucket=subjects.RELAY_BUCKET,
            description="Studroom relay: position per event store",
            history=1,
            storage=api.StorageType.FILE,
            replicas=config.replicas,
            direct=True,
        )
