"""The relay's dead letters: the messages of stored events it cannot publish.

A message that can never be published (its subject would not be a valid name, its
private copy has nobody to go to, it is bigger than the server takes, JetStream refuses
it) must not stop the store: it is recorded with the mechanism every part shares
(``wire/dead_letters.py``: KV bucket ``studroom_dead_letters``, an ERROR line, a
counter) under ``<store>.<notification id>.<public|seat<n>>`` and the relay goes on.
The record says where the event is (store, notification, table, version), which
message, and why; never the message itself (a private copy holds a player's down
cards): the event is in the store. docs/design/relay.md, "Dead letters".
"""

from __future__ import annotations

import msgspec

from ..store.port import Notification
from ..wire.dead_letters import cut


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
        return cls(store, n.id, cut(n.stream_id), n.version, event, seat, cut(reason))

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
