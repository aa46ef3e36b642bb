"""The console's gateway on the shared live room, for the gateway's tests: bots at
tables of the module's own, the console on a free port of 127.0.0.1 in the same event
loop (a thread of its own: the tests call in), and :class:`Browser`, an aiohttp client
with a cookie jar and one WebSocket, as a browser uses the console."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import aiohttp
from aiohttp import web

from studroom.services.auth.authority import Authority
from studroom.services.console.gateway import Console
from studroom.services.auth.passwords import Passwords
from studroom.services.room.bots import Room
from studroom.services.room.plans import plan_tables

T = TypeVar("T")


class Gateway:
    def __init__(self, url: str, authority: Authority, tables: list[str], bots_per_table: int = 3, *,
                 books: Any = None, store_prefix: str | None = None) -> None:
        self.url, self.authority, self.tables = url, authority, tables
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.room = Room(url, plan_tables(tables, bots_per_table, {}), authority=authority, pace_ms=0, seed=3)
        self.passwords = Passwords(authority.folder)
        self.console = Console(url, authority, books=books, store_prefix=store_prefix)
        self.base = ""

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def start(self) -> None:
        await self.room.start()
        await self.console.start()
        self.runner = web.AppRunner(self.console.app())
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.base = f"http://127.0.0.1:{self.runner.addresses[0][1]}"

    async def stop(self) -> None:
        await self.runner.cleanup()
        await self.console.stop()
        await self.room.stop()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def browser(self, origin: str | None = None) -> Browser:
        return Browser(self.base, origin or self.base)


class Browser:
    """A browser's session at the console: cookies, one WebSocket, its pushes."""

    def __init__(self, base: str, origin: str) -> None:
        self.base, self.origin = base, origin
        self.http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.next_id = 0
        self.answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.pushes: list[dict[str, Any]] = []
        self.pushed = asyncio.Event()
        self.unasked: asyncio.Queue[dict[str, Any]] = asyncio.Queue()     # answers to frames sent raw
        self.reader: asyncio.Task[None] | None = None
        self.closed_with: int | None = None

    async def post(self, path: str, body: Any = None, data: bytes | None = None) -> tuple[int, dict[str, Any]]:
        async with self.http.post(self.base + path, json=body if data is None else None, data=data,
                                  headers={"Origin": self.origin}) as response:
            return response.status, await response.json()

    async def login(self, role: str, name: str, password: str) -> tuple[int, dict[str, Any]]:
        return await self.post("/api/login", {"role": role, "name": name, "password": password})

    async def connect(self) -> None:
        self.ws = await self.http.ws_connect(self.base + "/ws", headers={"Origin": self.origin})
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        assert self.ws is not None
        async for message in self.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            body = json.loads(message.data)
            if "push" in body:
                self.pushes.append(body)
                self.pushed.set()
            elif body.get("id") in self.answers:
                self.answers.pop(body["id"]).set_result(body)
            else:
                self.unasked.put_nowait(body)
        self.closed_with = self.ws.close_code
        for waiting in self.answers.values():
            waiting.cancel()

    async def send_raw(self, text: str) -> None:
        assert self.ws is not None
        await self.ws.send_str(text)

    async def ask(self, op: str, timeout: float = 30, **args: Any) -> dict[str, Any]:
        assert self.ws is not None
        self.next_id += 1
        answer = self.answers[self.next_id] = asyncio.get_running_loop().create_future()
        await self.ws.send_str(json.dumps({"id": self.next_id, "op": op, **args}))
        return await asyncio.wait_for(answer, timeout)

    async def until(self, found: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        """The first push (kept or to come) for which ``found`` is true."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for push in self.pushes[seen:]:
                if found(push):
                    return push
            seen = len(self.pushes)
            self.pushed.clear()
            left = deadline - time.monotonic()
            assert left > 0, f"no such push in {timeout} s; last: {self.pushes[-3:]}"
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.pushed.wait(), left)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            with contextlib.suppress(Exception):
                await self.reader
        await self.http.close()
