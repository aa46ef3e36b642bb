"""The lobby, live, for the tabs of one connection: the lobby's answer, kept current
from its bucket's writes (``projections/lobby/watching.LobbyPicture``, as ``studroom
lobby --watch``), asked again every ``REFRESH`` seconds; each change told to the
listeners at most every ``EVERY`` seconds.  One feed per connection, its subscription
held while a tab listens."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from studroom.projections.lobby.queries import LobbyQuery
from studroom.projections.lobby.watching import REFRESH, LobbyPicture, LobbyUnavailable, ask

from ..wire import subjects
from ..wire.subjects import LOBBY_BUCKET
from .shapes import whole

log = logging.getLogger("studroom.console")

EVERY = 0.5                         # seconds: at most two pushes a second


def tables_json(entries: Any) -> list[Any]:
    return [whole(entry) for entry in sorted(entries, key=lambda e: e.table_id)]


class LobbyFeed:
    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.picture = LobbyPicture(LobbyQuery())
        self.listeners: set[Callable[[list[Any]], None]] = set()
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.sub: Any = None

    def tables(self) -> list[Any]:
        return tables_json(self.picture.tables.values())

    async def add(self, listener: Callable[[list[Any]], None]) -> list[Any]:
        """Listen; the tables now (asked of the lobby when the feed starts)."""
        if self.task is None or self.task.done():
            self.sub = await self.nc.subscribe(subjects.lobby_changes(LOBBY_BUCKET), cb=self._written)
            try:
                self.picture.answered(await ask(self.nc, LobbyQuery()))
            except BaseException:
                await self._unsubscribe()
                raise
            self.task = asyncio.get_running_loop().create_task(self._run())
        self.listeners.add(listener)
        return self.tables()

    async def remove(self, listener: Callable[[list[Any]], None]) -> None:
        self.listeners.discard(listener)
        if not self.listeners:
            self.stop()
            await self._unsubscribe()

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    async def _unsubscribe(self) -> None:
        if self.sub is not None:
            sub, self.sub = self.sub, None
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _written(self, msg: Any) -> None:
        self.picture.bucket_message(msg)
        self.changed.set()

    async def _run(self) -> None:
        asked = time.monotonic()
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), max(0.0, asked + REFRESH - time.monotonic()))
            if time.monotonic() - asked >= REFRESH:
                asked = time.monotonic()
                try:
                    self.picture.answered(await ask(self.nc, LobbyQuery()))
                except LobbyUnavailable as e:
                    log.debug("console: the lobby did not answer: %s", e)
            self.changed.clear()
            tables = self.tables()
            for listener in list(self.listeners):
                listener(tables)
            await asyncio.sleep(EVERY)
