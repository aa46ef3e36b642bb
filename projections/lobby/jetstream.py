"""What the lobby declares in JetStream, idempotently: the KV bucket
``studroom_lobby`` (whichever instance starts first) and each instance's durable
consumer of the public stream.

Every instance reads every public event, in stream order, through a consumer of its
own (``studroom_lobby_<instance id>``), so a table's events reach each instance in
order and never split between instances; the bucket's compare-and-set makes each
event count once whichever instance writes it first (docs/design/lobby.md, "Several
instances").  An instance that is gone for good leaves its consumer to the server,
which deletes it after ``UNUSED_FOR`` without a client.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from nats.js.api import ConsumerConfig, KeyValueConfig, StorageType
from studroom.services.wire import declared, subjects
from studroom.services.wire.pull import shared_consumer
from studroom.services.wire.subjects import LOBBY_BUCKET

from .projection import public_subjects

CONSUMER_PREFIX: Final = "studroom_lobby_"   # + instance id: its consumer of STUDROOM_PUBLIC
UNUSED_FOR: Final = 7 * 24 * 3600.0          # seconds: the public stream's retention (relay)
MAX_ENTRY: Final = 32 * 1024                 # bytes of one entry: 8 seats, a hand, the hour take 2.5 kB, 5 kB
                                             # with 64-character names
MAX_TABLES: Final = 4096                     # tables the lobby keeps (a full list answer holds about 3,000)


def consumer_name(instance_id: str) -> str:
    return CONSUMER_PREFIX + subjects.check_name(instance_id)


def consumer_config(instance_id: str, ack_wait: float = 3.0) -> ConsumerConfig:
    """The instance's durable pull consumer of every public event: each message comes
    to it in stream order, and again until it is acknowledged; the server deletes it
    after ``UNUSED_FOR`` without a client.  A short ``ack_wait``: the messages a killed
    instance held come again soon (the events after them wait for them), and a message
    delivered twice changes nothing (its version is in the entry)."""
    config = shared_consumer(consumer_name(instance_id), public_subjects(), ack_wait,
                             "studroom lobby: public events -> KV bucket studroom_lobby")
    return dataclasses.replace(config, inactive_threshold=UNUSED_FOR)


def bucket_config(replicas: int = 1) -> KeyValueConfig:
    """One value per table, bounded: ``MAX_TABLES`` entries of ``MAX_ENTRY`` bytes at most.
    Only the lobby service may write it (services/auth/powers.py)."""
    return KeyValueConfig(bucket=LOBBY_BUCKET, history=1, replicas=replicas, storage=StorageType.FILE,
                          direct=True, description="studroom lobby: every table's public picture",
                          max_value_size=MAX_ENTRY, max_bytes=MAX_TABLES * MAX_ENTRY)


async def ensure_bucket(js: Any, replicas: int = 1) -> Any:
    """The lobby's bucket, created if missing (by this or another instance), its bounds
    brought up to date."""
    return await declared.ensure_bucket(js, bucket_config(replicas))
