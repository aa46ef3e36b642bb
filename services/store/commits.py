"""Commits heard as they happen: every append to a PostgreSQL event store NOTIFYs the
store's own channel (``<schema>.<table>``, ``store/postgres.py``), and :class:`Commits`
LISTENs to it on a connection of its own and sets an event at each commit.

So a reader reads only when its store moved: an idle room makes no reads (issue 20),
and nobody is signalled for another store's commits (until 2026-12-04 every store of
a database notified one channel, ``events``, naming the store in the payload: the
cashier's listener, idle and so always listening, was woken by every table commit).
The relay still reads a live store at once on the table service's NATS nudge: a
commit heard only lets it poll for a nudge lost (relay.md, "Latency and throughput",
says why the nudge stays).  While the connection is down (``listening`` false) the
reader polls as before; the event is set when the state changes either way, so that
a waiter looks again (and reads what was committed while nobody listened).

A reader that is busy anyway (it reads every few milliseconds on the nudges) says so
(:meth:`Commits.busy`): the listener stops listening at the next notification it gets,
and the reader polls meanwhile, as while the connection is down; :meth:`Commits.idle`
listens again.  Every commit heard costs the database a signal to the listening
backend and the listener a wake-up: at 16 busy tables not listening while busy cost
the relay and PostgreSQL 5-10 % less CPU per action (relay.md, "Listening only while
idle").
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

import psycopg
from psycopg import generators, sql

from ..runtime.retry import RECONNECT
from ..runtime.waiting import first_set

log = logging.getLogger(__name__)

# A connection that dies without a word (a network cut) is noticed in about 20 s.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 3, "keepalives_count": 3}
# How often the wait for a notification wakes for nothing. psycopg's own ``notifies()``
# wakes every 0.1 s (to notice a Ctrl-C): a poll of its own, ten loop turns a second.
QUIET_WAKE = 3600.0


def commits_channel(schema: str, table: str) -> str:
    """The channel a store's appends NOTIFY: its own (``<schema>.<table>``), so that a
    listener is signalled for its store's commits only.  PostgreSQL
    refuses a channel name longer than 63 bytes: a longer one is shortened, its end a
    digest of the whole."""
    name = f"{schema}.{table}"
    if len(name.encode()) <= 63:
        return name
    return f"{name.encode()[:40].decode(errors='ignore')}~{hashlib.sha256(name.encode()).hexdigest()[:16]}"


class Commits:
    """Sets ``wake`` at every commit NOTIFYing ``channel`` (a store's)."""

    def __init__(self, database_url: str, channel: str) -> None:
        self.database_url = database_url
        self.channel = channel
        self.wake = asyncio.Event()     # set: a commit heard since the last take()
        self.listening = False
        self.heard = 0                  # commits heard (tests, metrics)
        self._taken = asyncio.Event()
        self._wanted = asyncio.Event()  # set: the reader wants to hear (it is idle)
        self._wanted.set()

    @classmethod
    def of(cls, store: Any, database_url: str) -> Commits | None:
        """The commits of ``store`` at ``database_url``; None for a store that does not
        notify (the in-memory one)."""
        channel = getattr(store, "channel", None)
        return cls(database_url, channel) if isinstance(channel, str) else None

    def busy(self) -> None:
        """The reader reads often on its own: stop listening (at the next notification)."""
        self._wanted.clear()

    def idle(self) -> None:
        """The reader found nothing for a while: listen again."""
        self._wanted.set()

    def take(self) -> None:
        """Before a read: what is heard from now on wakes again."""
        self.wake.clear()
        self._taken.set()

    async def wait(self, other: asyncio.Event, timeout: float | None = None) -> None:
        """Until a commit is heard (or the listener stops or starts) or ``other`` is set,
        at most ``timeout`` seconds (None: no limit)."""
        await first_set(self.wake, other, timeout=timeout)

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
                    self._listening(False)
                    pauses = RECONNECT.pauses()
            await asyncio.sleep(next(pauses))

    async def _listen(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True,
                                                         **KEEPALIVES) as conn:
            while True:
                await self._wanted.wait()
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                self._listening(True)   # the reader reads what was committed while nobody listened
                await self._hear(conn)
                await conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(self.channel)))
                self._listening(False)  # the reader polls

    async def _hear(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Wake the reader at each commit until it no longer wants to hear (seen at the
        next notification after it said so)."""
        while self._wanted.is_set():
            heard = await conn.wait(generators.notifies(conn.pgconn), interval=QUIET_WAKE)
            if heard:
                self.heard += len(heard)
                self.wake.set()
                # Nothing more to tell until the reader reads: what comes meanwhile is
                # read off the socket in one go after it (one by one they cost more
                # than the reader's work).
                self._taken.clear()
                await self._taken.wait()

    def _listening(self, state: bool) -> None:
        self.listening = state
        self.wake.set()
