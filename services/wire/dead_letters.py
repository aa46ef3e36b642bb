"""Dead letters: messages set aside so that one bad message never stops a pipeline.

One mechanism for every part that moves messages: the relay sets aside a stored
event's message it can never publish (``relay/dead_letters.py`` says which), every
JetStream consumer (``pull.PullLoop``) a message it cannot handle.  Each is recorded
in KV bucket ``studroom_dead_letters``, with an ERROR line and a counter (the alarm),
and the pipeline goes on.  A record says where the message is and why, never a
private copy's body (a player's down cards).  Why a bucket, what an operator does:
docs/design/relay.md, "Dead letters".
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import msgspec
import nats.js.errors
from nats.js.api import KeyValueConfig, StorageType

from . import subjects

log = logging.getLogger("studroom.dead_letters")

DEAD_LETTER_BUCKET = "studroom_dead_letters"   # JetStream KV: one record per message set aside
SHOWN = 200      # characters of a table id, a subject or a reason kept in a record (one may be huge)
BODY_SHOWN = 2000  # characters of a consumed message's body kept in its record


class Letter(Protocol):
    """What a record needs: its key in the bucket and one line for the log."""

    @property
    def key(self) -> str: ...

    def describe(self) -> str: ...


class Undelivered(msgspec.Struct, frozen=True):
    """A JetStream message a consumer set aside: which message, how often it came, why;
    its body unless it is a private copy (the stream keeps the message until its
    retention drops it; a work queue's is gone once acknowledged)."""

    stream: str
    consumer: str
    seq: int                # its stream sequence (0: the server did not say)
    subject: str
    delivered: int          # deliveries so far, this one included
    reason: str
    body: str | None

    @classmethod
    def of(cls, msg: Any, stream: str, consumer: str, delivered: int, reason: str) -> Undelivered:
        try:
            seq = int(msg.metadata.sequence.stream)
        except Exception:  # noqa: BLE001 (not a JetStream message)
            seq = 0
        body = None
        if stream != subjects.PRIVATE_STREAM:
            body = cut(bytes(msg.data or b"").decode("utf-8", "replace"), BODY_SHOWN)
        return cls(stream, consumer, seq, cut(msg.subject or ""), delivered, cut(reason), body)

    @property
    def key(self) -> str:
        """One key per message and consumer: recording it twice finds the first."""
        return f"{self.stream}.{self.consumer}.{self.seq}"

    def describe(self) -> str:
        return (f"message {self.seq} of {self.stream} on {self.subject} for consumer {self.consumer}, "
                f"delivery {self.delivered}: {self.reason}")


def cut(text: str, shown: int = SHOWN) -> str:
    return text if len(text) <= shown else f"{text[:shown]}... ({len(text)} characters)"


def bucket_config(replicas: int = 1) -> KeyValueConfig:
    """The records, kept until an operator deletes them: they are few, each one a bug
    or an attack that got past the door."""
    return KeyValueConfig(
        bucket=DEAD_LETTER_BUCKET,
        description="Studroom: messages set aside (unpublishable, or no consumer could handle them)",
        history=1,
        storage=StorageType.FILE,
        replicas=replicas,
    )


async def set_aside(kv: Any, letter: Letter) -> bool:
    """Record ``letter``; False if it was recorded before (a batch relayed again after a
    restart, a message whose acknowledgement was lost)."""
    try:
        await kv.create(letter.key, msgspec.json.encode(letter))
    except nats.js.errors.KeyWrongLastSequenceError:
        return False
    return True


class DeadLetters:
    """The bucket (opened, or created, on first use) and the alarm: an ERROR line per new
    record and the ``recorded`` counter.  NATS errors propagate: the caller leaves the
    message where it is and records it later."""

    def __init__(self, js: Any, who: str, *, replicas: int = 1, kv: Any = None) -> None:
        self.js = js
        self.who = who
        self.replicas = replicas
        self.kv = kv
        self.recorded = 0

    async def record(self, letter: Letter) -> bool:
        """Record ``letter`` (False: recorded before, not counted again)."""
        if self.kv is None:
            self.kv = await open_bucket(self.js, self.replicas)
        if not await set_aside(self.kv, letter):
            log.info("%s: %s was set aside before", self.who, letter.key)
            return False
        self.recorded += 1
        log.error("%s: SET ASIDE %s; recorded in KV bucket %s, key %s", self.who, letter.describe(),
                  DEAD_LETTER_BUCKET, letter.key)
        return True


async def open_bucket(js: Any, replicas: int = 1) -> Any:
    """The dead-letter bucket, created if missing (by this or another process)."""
    from .declared import ensure_bucket

    return await ensure_bucket(js, bucket_config(replicas))
