"""A PostgreSQL event store's commits as they happen: every append NOTIFYs the store's
channel (``store/postgres.py``, eventsourcing's convention), and :class:`Commits`
LISTENs to it on a connection of its own and sets an event at each one.

So a reader that waits on it (the relay, the cashier's recovery) reads the store when
something was written, never on a timer: an idle room makes no reads. While the
connection is down (``listening`` false) the reader polls as before; the event is set
when the state changes either way, so that a waiter looks again (and reads what was
committed while nobody listened).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import psycopg
from psycopg import sql

from ..runtime.retry import RECONNECT

log = logging.getLogger(__name__)

# A connection that dies without a word (a network cut) is noticed in about 20 s.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 3, "keepalives_count": 3}


class Commits:
    """Sets ``wake`` at every commit to the store whose channel is ``channel``."""

    def __init__(self, database_url: str, channel: str) -> None:
        self.database_url = database_url
        self.channel = channel
        self.wake = asyncio.Event()
        self.listening = False
        self.heard = 0                  # notifications received (tests, metrics)

    @classmethod
    def of(cls, store: Any, database_url: str) -> Commits | None:
        """The commits of ``store`` at ``database_url``; None for a store that does not
        notify (the in-memory one)."""
        recorder = getattr(store, "recorder", None)
        channel = getattr(recorder, "channel_name", None)
        return cls(database_url, channel) if isinstance(channel, str) else None

    async def run(self) -> None:
        """Listen until cancelled, connecting again after a failure."""
        pauses = RECONNECT.pauses()
        while True:
            try:
                await self._listen()
            except (psycopg.Error, OSError) as error:
                log.warning("listening to %s: %r; again in a moment (reads poll meanwhile)", self.channel, error)
            finally:
                if self.listening:
                    self.listening = False
                    self.wake.set()
                    pauses = RECONNECT.pauses()
            await asyncio.sleep(next(pauses))

    async def _listen(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True,
                                                         **KEEPALIVES) as conn:
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            self.listening = True
            self.wake.set()             # what was committed while nobody listened
            async for _ in conn.notifies():
                self.heard += 1
                self.wake.set()
