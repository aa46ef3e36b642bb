"""Dead letters: the messages of stored events the relay cannot publish, set aside.

A message that can never be published (its subject would not be a valid name, its
private copy has nobody to go to, it is bigger than the server takes, JetStream refuses
it) must not stop the store: it is recorded in KV bucket ``studroom_dead_letters``
under ``<store>.<notification id>.<public|seat<n>>`` and the relay goes on. The record
says where the event is (store, notification, table, version), which message, and why;
never the message itself (a private copy holds a player's down cards): the event is in
the store. Why a bucket, and what an operator does with a record: docs/design/relay.md.
"""

from __future__ import annotations

from typing import Any

import msgspec
import nats.js.errors
from ..store.port import Notification

DEAD_LETTER_BUCKET = "studroom_dead_letters"   # JetStream KV: one record per message set aside
SHOWN = 200      # characters of a table id or a reason kept in a record (one may be huge)


class Unpublishable(ValueError):
    """A message that can never be published: set it aside."""


class DeadLetter(msgspec.Struct, frozen=True):
    """One message set aside: which event's, which copy (``seat`` None: the public
    view), and why."""

    store: str
    notification: int
    table: str
    version: int
    event: str
    seat: int | None
    reason: str

    @classmethod
    def of(cls, store: str, n: Notification, event: str, seat: int | None, reason: str) -> DeadLetter:
        return cls(store, n.id, _cut(n.stream_id), n.version, event, seat, _cut(reason))

    @property
    def key(self) -> str:
        """Its key in the bucket (one per message: writing it twice finds the first)."""
        return f"{self.store}.{self.notification}.{self.copy}"

    @property
    def copy(self) -> str:
        return "public" if self.seat is None else f"seat{self.seat}"

    def describe(self) -> str:
        """One line for the log: where the event is, which copy, why."""
        return (f"notification {self.notification} of store {self.store} (table {self.table!r} "
                f"v{self.version}, {self.event}, {self.copy}): {self.reason}")


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters)"


async def set_aside(kv: Any, letter: DeadLetter) -> bool:
    """Record ``letter``; False if it was recorded before (a batch relayed again after
    a restart)."""
    try:
        await kv.create(letter.key, msgspec.json.encode(letter))
    except nats.js.errors.KeyWrongLastSequenceError:
        return False
    return True
