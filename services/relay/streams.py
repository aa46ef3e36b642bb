"""What the relay declares in JetStream, created or brought up to date at every
connection: the public and the private stream (each with its retention), the KV bucket
of positions and the KV bucket of dead letters. Durability (replicas, fsync) and
retention: docs/design/relay.md."""

from __future__ import annotations

from typing import Any

import nats.js.errors
from nats.js import api
from ..wire import subjects
from .config import RelayConfig
from .dead_letters import DEAD_LETTER_BUCKET


def stream_configs(config: RelayConfig) -> list[api.StreamConfig]:
    """The public and the private stream. Messages older than the stream's max age are
    dropped: a private copy holds a player's down cards, kept ``private_max_age``."""
    common: dict[str, Any] = {
        "storage": api.StorageType.FILE,
        "retention": api.RetentionPolicy.LIMITS,
        "discard": api.DiscardPolicy.OLD,
        "num_replicas": config.replicas,
        "allow_direct": True,
    }
    return [
        api.StreamConfig(
            name=subjects.PUBLIC_STREAM,
            subjects=[subjects.all_public_events()],
            description="Studroom: public view of every table event (written by the relay)",
            max_age=config.public_max_age,
            duplicate_window=min(config.duplicate_window, config.public_max_age),
            **common,
        ),
        api.StreamConfig(
            name=subjects.PRIVATE_STREAM,
            subjects=[subjects.all_private_events()],
            description="Studroom: each player's private copies (written by the relay)",
            max_age=config.private_max_age,
            duplicate_window=min(config.duplicate_window, config.private_max_age),
            **common,
        ),
    ]


def _drifted(have: api.StreamConfig, wanted: api.StreamConfig) -> bool:
    """Whether ``have`` lacks a subject, or has another window, max age or access."""
    return (
        not set(wanted.subjects or []) <= set(have.subjects or [])
        or abs((have.duplicate_window or 0) - (wanted.duplicate_window or 0)) > 1e-3
        or abs((have.max_age or 0) - (wanted.max_age or 0)) > 1e-3
        or not have.allow_direct
    )


async def ensure_streams(js: Any, config: RelayConfig = RelayConfig()) -> None:
    """Create the relay's streams, or bring them up to date (keeping extra subjects)."""
    for wanted in stream_configs(config):
        try:
            info = await js.stream_info(wanted.name)
        except nats.js.errors.NotFoundError:
            await js.add_stream(wanted)
            continue
        have = info.config
        if _drifted(have, wanted):
            await js.update_stream(
                have.evolve(
                    subjects=sorted(set(have.subjects or []) | set(wanted.subjects or [])),
                    duplicate_window=wanted.duplicate_window,
                    max_age=wanted.max_age,
                    allow_direct=True,
                )
            )


def position_bucket(config: RelayConfig) -> api.KeyValueConfig:
    """One position record per store (``position.py``)."""
    return api.KeyValueConfig(
        bucket=subjects.RELAY_BUCKET,
        description="Studroom relay: position per event store",
        history=1,
        storage=api.StorageType.FILE,
        replicas=config.replicas,
        direct=True,
    )


def dead_letter_bucket(config: RelayConfig) -> api.KeyValueConfig:
    """The messages set aside (``dead_letters.py``), kept until an operator deletes
    them: they are few, each one a bug or an attack that got past the door."""
    return api.KeyValueConfig(
        bucket=DEAD_LETTER_BUCKET,
        description="Studroom relay: messages of stored events it could not publish",
        history=1,
        storage=api.StorageType.FILE,
        replicas=config.replicas,
    )


async def ensure_bucket(js: Any, bucket: api.KeyValueConfig) -> Any:
    """The KV bucket, created if missing."""
    try:
        return await js.key_value(bucket.bucket)
    except nats.js.errors.BucketNotFoundError:
        return await js.create_key_value(bucket)
