"""What the relay declares in JetStream, created or brought up to date at every
connection: the public and the private stream (each with its retention) and the KV
bucket of positions (the bucket of dead letters is ``wire/dead_letters.py``'s).
Durability (replicas, fsync) and retention: docs/design/relay.md."""

from __future__ import annotations

from typing import Any, Final

from nats.js import api

from ..wire import subjects
from ..wire.declared import ensure_bucket, ensure_stream
from .config import RelayConfig

__all__ = ["ensure_bucket", "ensure_streams", "position_bucket", "stream_configs"]

MAX_STORES: Final = 1024            # event stores a room may have (its layout records a few)
POSITION_MAX: Final = 1024          # bytes of one position record (a few dozen in fact)


def stream_configs(config: RelayConfig) -> list[api.StreamConfig]:
    """The public and the private stream. Messages older than the stream's max age, or
    beyond its max bytes, are dropped (oldest first): a private copy holds a player's
    down cards, kept ``private_max_age``."""
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
            max_bytes=config.public_max_bytes,
            duplicate_window=min(config.duplicate_window, config.public_max_age),
            **common,
        ),
        api.StreamConfig(
            name=subjects.PRIVATE_STREAM,
            subjects=[subjects.all_private_events()],
            description="Studroom: each player's private copies (written by the relay)",
            max_age=config.private_max_age,
            max_bytes=config.private_max_bytes,
            duplicate_window=min(config.duplicate_window, config.private_max_age),
            **common,
        ),
    ]


async def ensure_streams(js: Any, config: RelayConfig = RelayConfig()) -> None:
    """Create the relay's streams, or bring their limits up to date (keeping extra subjects)."""
    for wanted in stream_configs(config):
        await ensure_stream(js, wanted)


def position_bucket(config: RelayConfig) -> api.KeyValueConfig:
    """One position record per store (``position.py``), bounded: a record's size, and
    room for ``MAX_STORES`` of them (and their headers)."""
    return api.KeyValueConfig(
        bucket=subjects.RELAY_BUCKET,
        description="Studroom relay: position per event store",
        history=1,
        storage=api.StorageType.FILE,
        replicas=config.replicas,
        direct=True,
        max_value_size=POSITION_MAX,
        max_bytes=MAX_STORES * 2 * POSITION_MAX,
    )
