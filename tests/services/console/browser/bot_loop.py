"""The browser tests' side of the room, in a thread of its own: an asyncio loop that
runs the bots (``Room``) and the test's own NATS calls (the floor's deposits, table
views), while the test itself drives the browser (Playwright's sync API) in the main
thread.  ``call(coroutine)`` runs one on the loop and returns its result."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from live_room import LiveRoom
from studroom.domain.config import TableConfig
from studroom.domain.views import TableView
from studroom.services.client.cashier import CashierClient
from studroom.services.client.table import TableClient
from studroom.services.room.bots import Room
from studroom.services.room.plans import TablePlan
from studroom.services.runtime.processes import process
from studroom.services.store.inspect import load_tables

T = TypeVar("T")


class BotLoop:
    """Bots at the tests' tables and the floor's connection, on one loop in a thread."""

    def __init__(self, room: LiveRoom) -> None:
        self.room = room
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="browser-bots", daemon=True)
        self.rooms: list[Room] = []
        self.floor: TableClient | None = None
        self.cashier: CashierClient | None = None

    def start(self) -> None:
        self.thread.start()
        self.call(self._connect())

    async def _connect(self) -> None:
        nc = await process.connect(self.room.url, "test-browser-floor",
                                   creds=self.room.authority.ensure("operator", "floor"))
        self.floor = TableClient(nc, "operator", "floor")
        self.cashier = CashierClient(nc, "operator", "floor", retry_for=30.0)

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 90.0) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def seat_bots(self, table_id: str, config: TableConfig, seats: Sequence[int], *, pace_ms: int = 0,
                  seed: int = 21) -> Room:
        """Open ``table_id`` (the room's floor) and seat a bot at each of ``seats``."""
        plan = TablePlan(table_id, config, {seat: f"{table_id}-p{seat}" for seat in seats})
        bots = Room(self.room.url, [plan], authority=self.room.authority, pace_ms=pace_ms, seed=seed)
        self.call(bots.start())
        self.rooms.append(bots)
        return bots

    def view(self, table_id: str) -> TableView:
        assert self.floor is not None
        return self.call(self.floor.view(table_id))

    def until(self, table_id: str, check: Callable[[TableView], bool], what: str, within: float = 30.0) -> TableView:
        """The floor's view of the table once ``check`` holds (fails after ``within`` s)."""
        deadline = time.monotonic() + within
        while True:
            view = self.view(table_id)
            if check(view):
                return view
            assert time.monotonic() < deadline, f"not within {within} s: {what}; the table: {view}"
            time.sleep(0.1)

    def deposit(self, player: str, amount: int) -> None:
        assert self.cashier is not None
        reply = self.call(self.cashier.deposit(player, amount, f"browser-{player}-{time.time_ns()}"))
        assert reply.ok, reply

    def stored(self, table_id: str) -> list[Any]:
        """The table's stored events (version ``i + 1`` at index ``i``): the truth."""
        return load_tables(self.room.database_url, self.room.schemas, only=[table_id]).get(table_id, [])

    def stop(self) -> None:
        async def close() -> None:
            for bots in self.rooms:
                await bots.stop()
            if self.floor is not None:
                await self.floor.nc.drain()

        try:
            self.call(close(), timeout=30.0)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10.0)
