"""What the relay declares in JetStream, created or brought up to date at every
connection: the public and the private stream (each with its retention) and the KV
bucket of positions (the bucket of dead letters is ``wire/dead_letters.py``'s).
Durability (replicas, fsync) and retention: docs/design/relay.md."""

from __future__ import annotations

from typing import Any, Final

import nats.js.errors
from nats.js import api

from ..runtime.text import number
from ..wire import subjects
from ..wire.declared import Refused, ensure_bucket, ensure_stream
from .config import RelayConfig

__all__ = ["ensure_bucket", "ensure_streams", "position_bucket", "stream_configs"]

MAX_STORES: Final = 1024            # event stores a room may have (its layout records a few)
POSITION_MAX: Final = 1024          # bytes of one position record (a few dozen in fact)
# JetStream's "insufficient storage resources available" and "insufficient resources"
# (a clustered server says "no suitable peers for placement, insufficient storage": 10005)
SHORT_OF_STORAGE: Final = (10047, 10023)
MAX_BYTES_OPTION: Final = {subjects.PUBLIC_STREAM: "--public-max-bytes", subjects.PRIVATE_STREAM: "--private-max-bytes"}


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
    """Create the relay's streams, or bring their limits up to date (keeping extra
    subjects).  :class:`Refused` naming the fix when the server has too little storage
    to reserve a stream's max bytes."""
    for wanted in stream_configs(config):
        try:
            await ensure_stream(js, wanted)
        except (Refused, nats.js.errors.APIError) as error:
            said = error.__cause__ if isinstance(error, Refused) else error
            if not short_of_storage(said):
                raise
            raise Refused(storage_text(wanted, config, said)) from said


async def public_max_msg_size(js: Any) -> int:
    """The most bytes the public stream takes in one message (0: no limit of its own;
    an operator may set one): the relay's runs of events stay under it."""
    info = await js.stream_info(subjects.PUBLIC_STREAM)
    return max(info.config.max_msg_size or 0, 0)


def short_of_storage(error: BaseException | None) -> bool:
    """Whether the server refused a stream for want of storage to reserve its bytes."""
    return isinstance(error, nats.js.errors.APIError) and (
        error.err_code in SHORT_OF_STORAGE or "insufficient storage" in (error.description or ""))


def storage_text(wanted: api.StreamConfig, config: RelayConfig, error: nats.js.errors.APIError) -> str:
    """The one line a relay stops with when the server cannot reserve ``wanted``'s bytes."""
    both = config.public_max_bytes + config.private_max_bytes
    return (f"stream {wanted.name} cannot reserve its {number(wanted.max_bytes or 0)} bytes "
            f"({MAX_BYTES_OPTION[wanted.name]}) of JetStream file storage: the NATS server says "
            f"{error.description!r} (code {error.err_code}); the relay's streams reserve {number(both)} bytes "
            f"in all: raise the server's max_file_store (its jetstream block) or start the relay with a smaller "
            f"--public-max-bytes or --private-max-bytes, then start again")


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
