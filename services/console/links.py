"""The console's NATS connections: one per logged-in person, with his own identity
(credentials issued by the room's Authority at login, in memory only), and one for
every spectator (the room's ``spectator.public``).

A :class:`Link` is shared by all the sessions and tabs of its identity: one table
client (one command id sequence), one cashier client, one NATS subscription per
subject whatever the number of tabs following it (:class:`Hub`), one lobby picture
(:class:`LobbyFeed`).  It ends when its last session ends, when its credentials end,
or when the server refuses its key (a revocation): then every session on it ends.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
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
        self.since = time.time()
        self.table = TableClient(nc, role, name, retry_for=5.0) if role != "spectator" else None
        self.cashier = CashierClient(nc, role, name, retry_for=5.0) if role != "spectator" else None
        self.hub = Hub(nc)
        self.lobby: Any = None                 # its LobbyFeed, made on first use (.lobby_feed)
        self.sessions: set[Any] = set()
        self.ended = asyncio.Event()
        self.on_end: list[Callable[[Link], None]] = []

    @property
    def identity(self) -> tuple[str, str]:
        return self.role, self.name

    def fresh(self) -> bool:
        """More than half of its lifetime left: a new session may join it."""
        return not self.ended.is_set() and self.expires - time.time() > (self.expires - self.since) / 2

    def end(self) -> None:
        """Mark it ended (closed, refused, expired) and tell its owners once."""
        if not self.ended.is_set():
            self.ended.set()
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


async def connect_person(url: str, authority: Authority, role: str, name: str,
                         lifetime: int = SESSION_LIFETIME) -> Link:
    """A connection as ``name`` of ``role``, with credentials issued now for ``lifetime``
    seconds, held in this process's memory only."""
    token, seed, expires = await asyncio.to_thread(authority.session_user, role, name, lifetime)
    jwt_bytes = token.encode()

    def user_jwt() -> bytearray:
        return bytearray(jwt_bytes)

    def sign(nonce: str) -> bytes:
        key = nkeys.from_seed(bytearray(seed))
        try:
            return base64.b64encode(key.sign(nonce.encode()))
        finally:
            key.wipe()

    return await _connect(url, role, name, expires, user_jwt_cb=user_jwt, signature_cb=sign,
                          inbox_prefix=subjects.inbox_prefix(role, name))


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


def event_push(table_id: str, msg: Any) -> dict[str, Any] | None:
    """A relay message as the browser's ``event`` push (None: not an event message)."""
    version = (msg.headers or {}).get(subjects.VERSION_HEADER, "")
    if not version.isdecimal():
        return None
    try:
        event = msgspec.json.decode(msg.data)
    except msgspec.DecodeError:
        return None
    return {"push": "event", "table": table_id, "version": int(version),
            "private": msg.subject.startswith(f"{subjects.PREFIX}.priv."), "event": event}
