"""Dead letters: messages set aside so that one bad message never stops a pipeline.

One mechanism for every part that moves messages: the relay sets aside a stored
event's message it can never publish (``relay/dead_letters.py`` says which), every
JetStream consumer (``pull.PullLoop``) a message it cannot handle.  Each is recorded
in KV bucket ``studroom_dead_letters``, with an ERROR line and a counter (the alarm),
and the pipeline goes on.  A record says where the message is and why, never a
private copy's body (a player's down cards).  Why a bucket, what an operator does:
docs/design/relay.md, "Dead letters".

The bucket is bounded (:func:`bucket_config`): a record is at most ``MAX_RECORD``
bytes (a longer body is cut, the subject and the reason stay), records go after
``KEPT_FOR``, and when the bucket holds ``MAX_BYTES`` the oldest go first, so a
new alarm is always recorded.  A key is where the message was (a stream sequence, a
store's notification id), which nobody but the server and the store chooses; a value
found under it that is no record of that message (written there by someone else) is
replaced and the replacement logged.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

import msgspec
import nats.js.errors
from nats.js.api import DiscardPolicy, KeyValueConfig, StorageType

from . import subjects

log = logging.getLogger("studroom.dead_letters")

from .subjects import DEAD_LETTER_BUCKET

SHOWN = 200      # characters of a table id, a subject or a reason kept in a record (one may be huge)
BODY_SHOWN = 2000  # characters of a consumed message's body kept in its record
MAX_RECORD: Final = 8 * 1024                  # bytes of one record, at most (the bucket refuses more)
MAX_BYTES: Final = 64 * 1024 * 1024           # bytes of the whole bucket: then the oldest records go
KEPT_FOR: Final = 7 * 24 * 3600.0             # seconds a record is kept (the streams' retention)


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

    def fitted(self, limit: int) -> Undelivered:
        """Its body cut until the record fits ``limit`` bytes (a body of escaped characters
        takes up to six bytes a character); none if nothing of it fits."""
        letter = self
        while len(msgspec.json.encode(letter)) > limit and letter.body:
            letter = msgspec.structs.replace(letter, body=cut(self.body or "", len(letter.body) // 2)
                                             if len(letter.body) > 64 else None)
        return letter


def cut(text: str, shown: int = SHOWN) -> str:
    return text if len(text) <= shown else f"{text[:shown]}... ({len(text)} characters)"


def bucket_config(replicas: int = 1) -> KeyValueConfig:
    """The records, kept ``KEPT_FOR`` or until an operator deletes them: they are few,
    each one a bug or an attack that got past the door; bounded all the same (above).
    Declared with :data:`DISCARD` (:func:`open_bucket`)."""
    return KeyValueConfig(
        bucket=DEAD_LETTER_BUCKET,
        description="Studroom: messages set aside (unpublishable, or no consumer could handle them)",
        history=1,
        storage=StorageType.FILE,
        replicas=replicas,
        max_value_size=MAX_RECORD,
        max_bytes=MAX_BYTES,
        ttl=KEPT_FOR,
    )


DISCARD: Final = DiscardPolicy.OLD      # a full bucket drops its oldest records, never a new alarm


async def set_aside(kv: Any, letter: Letter) -> bool:
    """Record ``letter`` (cut to ``MAX_RECORD`` bytes); False if it was recorded before (a
    batch relayed again after a restart, a message whose acknowledgement was lost)."""
    data = encode(letter)
    try:
        await kv.create(letter.key, data)
    except nats.js.errors.KeyWrongLastSequenceError:
        return not await _recorded(kv, letter, data)
    return True


def encode(letter: Letter) -> bytes:
    """The record as stored; a body cut to fit ``MAX_RECORD`` (the other fields are cut at
    ``SHOWN`` characters, and only a consumed message's record has a body)."""
    data = msgspec.json.encode(letter)
    if len(data) > MAX_RECORD and isinstance(letter, Undelivered):
        data = msgspec.json.encode(letter.fitted(MAX_RECORD))
    return data


async def _recorded(kv: Any, letter: Letter, data: bytes) -> bool:
    """Does ``letter``'s key hold a record of its message (the same kind, the same key:
    the same message set aside before, perhaps at another delivery)?  If another value
    was put there first, it is replaced: False."""
    held = await kv.get(letter.key)
    try:
        if msgspec.json.decode(held.value or b"", type=type(letter)).key == letter.key:
            return True
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    log.warning("dead letters: key %s held a value that is no record of its message (%d bytes): replaced",
                letter.key, len(held.value or b""))
    await kv.update(letter.key, data, last=held.revision)
    return False


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
    """The dead-letter bucket, created if missing (by this or another process), its
    bounds brought up to date."""
    from .declared import ensure_bucket

    return await ensure_bucket(js, bucket_config(replicas), DISCARD)
