"""What wakes an idle tracking projector (tracking.py): the event stores' own ``NOTIFY``.

The append function notifies at every commit (services/store/postgres.py) the store's
own channel (``<schema>.<table>``), so a notification says "this store appended": the
projector listens to the channels of the stores it follows, one connection per
PostgreSQL server that holds one.

It listens **only while the projector is idle**: ``LISTEN`` when a fold found nothing,
``UNLISTEN`` when one finds something again.  Listening costs at every commit: each
listening backend is signalled and sends a message, the client reads it (measured in
docs/design/projections.md, "Cost": listening all along cost six times the CPU of
the fold itself under load).  While the stores are busy the projector folds at its
pace and needs no wake-up.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import psycopg
from psycopg import sql
from studroom.services.runtime.waiting import first_set


class Waker:
    """Sleeps until a followed store appends (``(server URL, channel)`` pairs).

    :attr:`woken` is set by every notification from when it listens; the projector
    clears it before each fold (what is appended after that wakes it).  While it
    sleeps it waits on the connections' sockets itself (psycopg's ``notifies()``
    looks every 0.1 s even when nothing comes: ten wake-ups a second of an idle
    process)."""

    def __init__(self) -> None:
        self.woken = asyncio.Event()
        self._conns: dict[str, psycopg.AsyncConnection[Any]] = {}
        self._heard: dict[str, set[str]] = {}        # per server: the channels listened to now
        self._failed: set[str] = set()               # servers whose connection failed while it slept

    async def listen(self, channels: set[tuple[str, str]]) -> bool:
        """Listen on every channel of ``channels`` (connecting to their servers): True
        when it was not listening on all of them (the caller folds once more before
        it sleeps: what was appended before could not wake it)."""
        new = False
        for url, channel in sorted(channels):
            if url in self._failed:
                await self._drop(url)
            heard = self._heard.setdefault(url, set())
            if channel not in heard:
                conn = await self._connection(url)
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                heard.add(channel)
                new = True
        return new

    async def unlisten(self) -> None:
        """Stop listening (the projector is busy: it folds at its pace)."""
        for url, heard in self._heard.items():
            if heard:
                heard.clear()
                await self._conns[url].execute("UNLISTEN *")

    async def sleep(self, stop: asyncio.Event, seconds: float) -> None:
        """Until a notification on any server (since :attr:`woken` was cleared),
        ``stop``, or ``seconds`` have passed (a server's connection that fails wakes
        it too: the next fold finds out)."""
        if self.woken.is_set() or stop.is_set():
            return
        loop = asyncio.get_running_loop()
        watched = []
        for url, conn in self._conns.items():
            if self._heard.get(url):
                loop.add_reader(conn.pgconn.socket, self._readable, url, conn)
                watched.append(conn.pgconn.socket)
        try:
            await first_set(stop, self.woken, timeout=seconds)
        finally:
            for fd in watched:
                loop.remove_reader(fd)

    def _readable(self, url: str, conn: psycopg.AsyncConnection[Any]) -> None:
        """A listening connection's socket has something: its notifications (or a failure) wake."""
        try:
            conn.pgconn.consume_input()
            while conn.pgconn.notifies() is not None:
                pass
        except psycopg.Error:
            self._failed.add(url)
            asyncio.get_running_loop().remove_reader(conn.pgconn.socket)
        self.woken.set()

    def _heard_one(self, _: psycopg.Notify) -> None:
        """A notification psycopg read during a statement of ours (LISTEN, UNLISTEN)."""
        self.woken.set()

    async def _connection(self, url: str) -> psycopg.AsyncConnection[Any]:
        conn = self._conns.get(url)
        if conn is None or conn.closed or conn.broken:
            await self._drop(url)
            conn = self._conns[url] = await psycopg.AsyncConnection.connect(url, autocommit=True)
            conn.add_notify_handler(self._heard_one)
        return conn

    async def _drop(self, url: str) -> None:
        conn = self._conns.pop(url, None)
        self._heard.pop(url, None)
        self._failed.discard(url)
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def close(self) -> None:
        for url in list(self._conns):
            await self._drop(url)
