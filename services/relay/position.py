"""A store's position record: how far the relay got, as JSON in KV bucket
``studroom_relay`` under the store's name. What each field promises, and how a
restart uses it: docs/design/relay.md."""

from __future__ import annotations

import json
from typing import NamedTuple

VERSION = 1


class PositionRecord(NamedTuple):
    position: int = 0   # every copy of every notification up to this id is stored
    pub_seq: int = 0    # the highest sequences acked so far in each stream
    priv_seq: int = 0
    window: int = 0     # the most notifications a batch may have had in flight

    def encode(self, at: float) -> bytes:
        """The record as written, ``at`` the time of writing (for people reading it)."""
        return json.dumps(
            {
                "v": VERSION,
                "position": self.position,
                "pub_seq": self.pub_seq,
                "priv_seq": self.priv_seq,
                "window": self.window,
                "at": at,
            }
        ).encode()

    @classmethod
    def decode(cls, value: bytes | None) -> PositionRecord:
        """A record as read (empty: nothing relayed yet)."""
        record = json.loads(value or b"{}")
        return cls(
            int(record.get("position", 0)),
            int(record.get("pub_seq", 0)),
            int(record.get("priv_seq", 0)),
            int(record.get("window", 0)),
        )
