"""The console's NATS connections: one per logged-in person, with his own identity
(credentials issued by the room's Authority at login, in memory only), and one for
every spectator (the room's ``spectator.public``).

A :class:`Link` is shared by all the sessions and tabs of its identity: one table
client (one command id sequence), one cashier client, one NATS subscription per
subject whatever the number of tabs following it (:class:`Hub`), one lobby picture
(:class:`LobbyFeed`).  Its credentials are issued again at half their life and the
connection made again with them.  It ends when its last session ends or when the
server refuses its key (a revocation): then every session on it ends.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import nats.errors
import nkeys

from ..auth.authority import Authority
from ..client.cashier import CashierClient
from ..client.messages import read_events
from ..client.table import TableClient
from ..runtime.processes import process
from ..wire import subjects

log = logging.getLogger("studroom.console")

SESSION_LIFETIME = 12 * 3600          # seconds: a person's credentials, hence his sessions
SPECTATOR = ("spectator", "public")
Listener = Callable[[Any], Awaitable[None] | None]


class Hub:
    """One NATS subscription per subject, fanned out to its listeners."""

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.subs: dict[str, tuple[Any, set[Listener]]] = {}
        self._lock = asyncio.Lock()

    async def add(self, subject: str, listener: Listener) -> None:
        async with self._lock:
            if subject not in self.subs:
                listeners: set[Listener] = set()

                async def deliver(msg: Any) -> None:
                    for each in list(listeners):
                        result = each(msg)
                        if result is not None:
                            await result

                self.subs[subject] = (await self.nc.subscribe(subject, cb=deliver), listeners)
            self.subs[subject][1].add(listener)

    async def remove(self, subject: str, listener: Listener) -> None:
        async with self._lock:
            held = self.subs.get(subject)
            if held is None:
                return
            sub, listeners = held
            listeners.discard(listener)
            if not listeners:
                del self.subs[subject]
                with contextlib.suppress(nats.errors.Error):
                    await sub.unsubscribe()


class Link:
    """One identity's NATS connection and its clients."""

    def __init__(self, nc: Any, role: str, name: str, expires: float) -> None:
        self.nc, self.role, self.name, self.expires = nc, role, name, expires
        self.table = TableClient(nc, role, name, retry_for=5.0) if role != "spectator" else None
        self.cashier = CashierClient(nc, role, name, retry_for=5.0) if role != "spectator" else None
        self.hub = Hub(nc)
        self.lobby: Any = None                 # its LobbyFeed, made on first use (.lobby_feed)
        self.sessions: set[Any] = set()
        self.ended = asyncio.Event()
        self.on_end: list[Callable[[Link], None]] = []
        self.tasks: list[asyncio.Task[None]] = []     # its own (the credentials' renewal)

    @property
    def identity(self) -> tuple[str, str]:
        return self.role, self.name

    def end(self) -> None:
        """Mark it ended (closed, refused, expired) and tell its owners once."""
        if not self.ended.is_set():
            self.ended.set()
            for task in self.tasks:
                task.cancel()
            for each in self.on_end:
                each(self)

    async def close(self) -> None:
        self.end()
        if self.lobby is not None:
            self.lobby.stop()
        with contextlib.suppress(Exception):
            await self.nc.close()


_ENDED = ("authorization violation", "authentication expired", "authentication revoked")


def _ended_by_server(error: BaseException) -> bool:
    """The server refused or stopped the key: revoked, expired, unknown."""
    text = str(error).lower()
    return isinstance(error, nats.errors.AuthorizationError) or any(said in text for said in _ENDED)


class _Held:
    """A person's credentials, in memory: swapped for new ones as they age."""

    def __init__(self, token: str, seed: bytes, expires: int) -> None:
        self.token, self.seed, self.expires = token, seed, expires

    def user_jwt(self) -> bytearray:
        return bytearray(self.token.encode())

    def sign(self, nonce: str) -> bytes:
        key = nkeys.from_seed(bytearray(self.seed))
        try:
            return base64.b64encode(key.sign(nonce.encode()))
        finally:
            key.wipe()


async def connect_person(url: str, authority: Authority, role: str, name: str,
                         lifetime: int = SESSION_LIFETIME) -> Link:
    """A connection as ``name`` of ``role``, with credentials issued now for ``lifetime``
    seconds (at most the role's), held in this process's memory only, and issued again
    at half their life, the connection made again with them (as long as it is open:
    its sessions end on their own)."""
    issue = functools.partial(asyncio.to_thread, authority.session_user, role, name, lifetime)
    held = _Held(*await issue())
    link = await _connect(url, role, name, held.expires, user_jwt_cb=held.user_jwt, signature_cb=held.sign,
                          inbox_prefix=subjects.inbox_prefix(role, name))

    async def renew() -> None:
        while not link.ended.is_set():
            await asyncio.sleep(max(0.0, (held.expires - time.time()) / 2))
            if link.ended.is_set():
                return
            held.token, held.seed, held.expires = await issue()
            link.expires = held.expires
            await link.nc.force_reconnect()
            log.info("console: %s.%s's connection renewed", role, name)

    link.tasks.append(asyncio.get_running_loop().create_task(renew()))
    return link


async def connect_spectator(url: str, creds: Path | None) -> Link:
    """The one connection of every spectator, as the room's ``spectator.public``
    (``creds``: its file, followed and renewed as every service's is)."""
    return await _connect(url, *SPECTATOR, float("inf"), creds=creds)


async def _connect(url: str, role: str, name: str, expires: float, **options: Any) -> Link:
    link: Link | None = None

    async def error(e: Exception) -> None:
        if link is not None and _ended_by_server(e):
            log.info("console: %s.%s's connection refused by the server: %s", role, name, e)
            asyncio.get_running_loop().create_task(link.close())

    async def closed() -> None:
        if link is not None:
            link.end()

    nc = await process.connect(url, f"studroom-console-{role}-{name}", error_cb=error, closed_cb=closed,
                               **options)
    link = Link(nc, role, name, expires)
    return link


def event_pushes(table_id: str, msg: Any) -> list[dict[str, Any]]:
    """A relay message as the browser's ``event`` pushes, one per event with the
    table's version after it, in order (none: not a relay message): the browser
    applies events one version at a time, whatever the number a message carries."""
    private = msg.subject.startswith(f"{subjects.PREFIX}.priv.")
    return [{"push": "event", "table": table_id, "version": version, "private": private,
             "event": msgspec.to_builtins(event)} for version, event in read_events(msg) or ()]
