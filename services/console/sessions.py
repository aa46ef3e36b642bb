"""Logged-in sessions: a random token (the cookie) -> the person and his connection.

A person's sessions share his one :class:`~.links.Link` (his tabs share a session: the
cookie), which renews its own credentials; it closes with his last session.  A session
ends at logout, when its link ends (key revoked) or at its expiry (12 hours after the
login).
Spectators' sessions share the one spectator link, which the console keeps open.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .limits import TokenBucket
from .links import SESSION_LIFETIME, Link

MAX_SESSIONS = 10_000                   # at once: beyond, new ones are refused (503) until some end
SPECTATOR_IDLE = 1800.0                 # seconds a spectator's session lives without a tab open


class TooManySessions(Exception):
    pass


@dataclass(eq=False)
class Session:
    token: str
    link: Link
    expires: float
    quota: TokenBucket = field(default_factory=TokenBucket)
    tabs: set[Any] = field(default_factory=set)          # their WebSockets' handlers (.close())
    ended: bool = False
    seen: float = field(default_factory=time.time)       # last a tab opened or closed

    @property
    def role(self) -> str:
        return self.link.role

    @property
    def name(self) -> str:
        return self.link.name


class Sessions:
    """``connect(role, name)`` makes a person's link (``links.connect_person``); the
    spectators' link is given."""

    def __init__(self, connect: Callable[[str, str], Awaitable[Link]], spectators: Link) -> None:
        self.connect = connect
        self.spectators = spectators
        self.by_token: dict[str, Session] = {}
        self.links: dict[tuple[str, str], Link] = {}
        self._joining: dict[tuple[str, str], asyncio.Lock] = {}

    def get(self, token: str | None) -> Session | None:
        session = self.by_token.get(token) if token else None
        if session is not None and (session.expires <= time.time() or session.link.ended.is_set()):
            asyncio.get_running_loop().create_task(self._end(session))
            return None
        return session

    async def login(self, role: str, name: str) -> Session:
        """A new session of a person whose password was checked."""
        self._room()
        identity = (role, name)
        async with self._joining.setdefault(identity, asyncio.Lock()):
            link = self.links.get(identity)
            if link is None or link.ended.is_set():
                link = await self.connect(role, name)
                link.on_end.append(self._link_ended)
                self.links[identity] = link
        return self._start(link, time.time() + SESSION_LIFETIME)

    def spectate(self) -> Session:
        self._room()
        return self._start(self.spectators, time.time() + SESSION_LIFETIME)

    async def logout(self, session: Session) -> None:
        await self._end(session)

    def _room(self) -> None:
        if len(self.by_token) >= MAX_SESSIONS:
            raise TooManySessions(f"{MAX_SESSIONS} sessions at once")

    def _start(self, link: Link, expires: float) -> Session:
        session = Session(secrets.token_urlsafe(32), link, expires)
        self.by_token[session.token] = session
        link.sessions.add(session)
        return session

    def _end(self, session: Session) -> Awaitable[None]:
        """End ``session``: its tabs closed, its link closed with its last session
        (never the spectators')."""
        session.ended = True
        self.by_token.pop(session.token, None)
        link = session.link
        link.sessions.discard(session)
        closing = [tab.close() for tab in list(session.tabs)]
        if link is not self.spectators and not link.sessions:
            if self.links.get(link.identity) is link:
                del self.links[link.identity]
            closing.append(link.close())
        return _all(closing)

    def _link_ended(self, link: Link) -> None:
        """The server ended a person's link: every session on it ends."""
        for session in list(link.sessions):
            asyncio.get_running_loop().create_task(self._end(session))  # type: ignore[arg-type]

    def sweep(self) -> Awaitable[None]:
        """End the sessions past their expiry, and spectators' left without a tab (a
        spectator's session costs nothing to make: they must not pile up)."""
        now = time.time()
        return _all([self._end(s) for s in list(self.by_token.values()) if s.expires <= now or (
            s.link is self.spectators and not s.tabs and now - s.seen > SPECTATOR_IDLE)])

    async def close(self) -> None:
        await _all([self._end(s) for s in list(self.by_token.values())])
        for link in list(self.links.values()):
            await link.close()


async def _all(awaitables: list[Awaitable[Any]]) -> None:
    for each in awaitables:
        with contextlib.suppress(Exception):
            await each
