"""The console's web server (aiohttp): the page, the login, the WebSocket.

Nothing a browser sends is trusted: bodies are capped and read strictly, the session
comes from an HttpOnly cookie, a WebSocket's ``Origin`` must be the console's own,
logins are limited per name and per client address, ops per session.  Every op runs
on the person's own NATS connection (:mod:`.links`), so the room's permissions apply
to it as to any client.  docs/design/console.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from ..auth.authority import Authority
from ..auth.passwords import ROLES, Passwords
from ..wire.door import retry_after_ms
from . import ops
from .limits import LoginLimits
from .links import Link, connect_person, connect_spectator
from .sessions import Session, Sessions, TooManySessions

log = logging.getLogger("studroom.console")

COOKIE = "studroom_session"
MAX_BODY = 16 * 1024                # bytes of an HTTP request's body, and of a WebSocket frame
OUTBOX = 2000                       # messages queued for one tab: a tab that reads slower is closed
SWEEP_EVERY = 30.0                  # seconds between looks for expired sessions
HASHING = 2                         # password checks at once (Argon2id: 64 MiB and a core each)
REVOKED = 4401                      # WebSocket close code: the session ended (logout, expiry, revocation)
GOING_AWAY = 1001                   # ... the console stops
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                               "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def static_dir() -> Path:
    return Path(str(resources.files("studroom.services.console") / "static"))


def _error(status: int, code: str, message: str, **extra: Any) -> web.Response:
    return web.json_response({"ok": False, "error": {"code": code, "message": message, **extra}}, status=status)


class Tab:
    """One WebSocket of a session: its outbox, the tables and lobby it follows."""

    def __init__(self, session: Session, ws: web.WebSocketResponse) -> None:
        self.session, self.ws = session, ws
        self.outbox: asyncio.Queue[str | None] = asyncio.Queue(OUTBOX)
        self.tables: dict[str, ops.TableListener] = {}
        self.lobby_listener: Callable[[list[Any]], None] | None = None
        self._after: list[Callable[[], None]] = []
        self.closing = False

    def send(self, message: dict[str, Any]) -> None:
        if self.closing:
            return
        try:
            self.outbox.put_nowait(json.dumps(message, separators=(",", ":")))
        except asyncio.QueueFull:
            log.info("console: a tab of %s.%s reads too slowly: closed", self.session.role, self.session.name)
            asyncio.get_running_loop().create_task(self.close(1008))

    def after_answer(self, then: Callable[[], None]) -> None:
        self._after.append(then)

    def answered(self, answer: dict[str, Any]) -> None:
        self.send(answer)
        after, self._after = self._after, []
        for then in after:
            then()

    async def writer(self) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):      # the socket went away meanwhile
            while (text := await self.outbox.get()) is not None:
                await self.ws.send_str(text)

    async def unwatch_table(self, table: str) -> None:
        listener = self.tables.pop(table, None)
        if listener is not None:
            link = self.session.link
            for subject in ops.table_subjects(link.role, link.name, table):
                await link.hub.remove(subject, listener)

    async def unwatch_lobby(self) -> None:
        listener, self.lobby_listener = self.lobby_listener, None
        if listener is not None and self.session.link.lobby is not None:
            await self.session.link.lobby.remove(listener)

    async def forget(self) -> None:
        """Stop following anything (the tab closes)."""
        for table in list(self.tables):
            with contextlib.suppress(Exception):
                await self.unwatch_table(table)
        with contextlib.suppress(Exception):
            await self.unwatch_lobby()

    async def close(self, code: int = REVOKED) -> None:
        if not self.closing:
            self.closing = True
            with contextlib.suppress(asyncio.QueueFull):
                self.outbox.put_nowait(None)
            with contextlib.suppress(Exception):
                await self.ws.close(code=code, message=b"session ended")


class Console:
    """The console over the room's NATS at ``url``; ``authority`` issues each person's
    credentials and holds the passwords.  ``origins``: origins allowed besides the
    console's own (``http(s)://<Host>``); ``behind_proxy``: the client's address from
    ``X-Forwarded-For``, the cookie ``Secure``."""

    def __init__(self, url: str, authority: Authority, *, origins: tuple[str, ...] = (),
                 behind_proxy: bool = False, spectator_creds: Path | None = None,
                 static: Path | None = None, books: Any = None, store_prefix: str | None = None) -> None:
        self.url, self.authority = url, authority
        self.books, self.store_prefix = books, store_prefix     # the desk's and the replay's (desk_ops)
        self._service_nc: Any = None
        self.passwords = Passwords(authority.folder)
        self.origins = {o.rstrip("/") for o in origins}
        self.behind_proxy = behind_proxy
        self.spectator_creds = spectator_creds
        self.static = static or static_dir()
        self.limits = LoginLimits()
        self._hashing = asyncio.Semaphore(HASHING)
        self.sessions: Sessions | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._tabs: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        creds = self.spectator_creds or await asyncio.to_thread(self.authority.ensure, "spectator", "public")
        spectators = await connect_spectator(self.url, creds)

        async def person(role: str, name: str) -> Link:
            return await connect_person(self.url, self.authority, role, name)

        self.sessions = Sessions(person, spectators)
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep())
        if self.books is not None:
            await self._desk()

    async def _desk(self) -> None:
        """The desk's and the replay's ops (desk_ops.py): the books and stores read with
        the console's own database access, the dead letters over the read-only
        ``projections`` service identity."""
        from ..runtime.processes import process
        from .desk_books import Reconciles
        from .desk_ops import register

        creds = await asyncio.to_thread(self.authority.ensure, "service", "projections")
        self._service_nc = await process.connect(self.url, "studroom-console-desk", creds=creds)
        prefix = {"store_prefix": self.store_prefix} if self.store_prefix else {}
        register(self.books, Reconciles(self.books), self._service_nc, **prefix)

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self.sessions is not None:
            await self.sessions.close()
            await self.sessions.spectators.close()
        if self._service_nc is not None:
            with contextlib.suppress(Exception):
                await self._service_nc.close()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_EVERY)
            assert self.sessions is not None
            await self.sessions.sweep()
            self.limits.sweep()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[_headers])
        app.on_shutdown.append(self._going_away)
        app.router.add_get("/", self.page)
        app.router.add_post("/api/login", self.login)
        app.router.add_post("/api/spectate", self.spectate)
        app.router.add_post("/api/logout", self.logout)
        app.router.add_get("/api/me", self.me)
        app.router.add_get("/ws", self.websocket)
        if self.static.is_dir():
            app.router.add_static("/static", self.static, follow_symlinks=False)
        return app

    async def _going_away(self, app: web.Application) -> None:
        """The server stops: every tab is closed (1001, going away; the page reconnects
        to the console's next start), else the stop would wait for them."""
        if self.sessions is not None:
            for session in list(self.sessions.by_token.values()):
                for tab in list(session.tabs):
                    await tab.close(GOING_AWAY)

    # ------------------------------------------------------------ HTTP

    async def page(self, request: web.Request) -> web.StreamResponse:
        index = self.static / "index.html"
        if not index.is_file():
            return web.Response(status=404, text="the console's page is not installed")
        return web.FileResponse(index, headers={"Cache-Control": "no-cache"})

    def _address(self, request: web.Request) -> str:
        if self.behind_proxy:
            forwarded = request.headers.get("X-Forwarded-For", "")
            if forwarded:
                return forwarded.rsplit(",", 1)[-1].strip()
        return request.remote or "?"

    def _own_origin(self, request: web.Request, origin: str | None) -> bool:
        if origin is None:
            return False
        origin = origin.rstrip("/")
        return origin in self.origins or origin in (f"http://{request.host}", f"https://{request.host}")

    def _session(self, request: web.Request) -> Session | None:
        assert self.sessions is not None
        return self.sessions.get(request.cookies.get(COOKIE))

    async def _body(self, request: web.Request) -> dict[str, Any] | web.Response:
        """The request's JSON object, or the response refusing it."""
        if "Origin" in request.headers and not self._own_origin(request, request.headers["Origin"]):
            return _error(403, "bad_origin", "this request comes from another site's page")
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _error(413, "too_large", f"a request body is at most {MAX_BODY} bytes")
        data = await request.content.read(MAX_BODY + 1)
        if len(data) > MAX_BODY:
            return _error(413, "too_large", f"a request body is at most {MAX_BODY} bytes")
        try:
            body = json.loads(data or b"{}")
        except (ValueError, UnicodeDecodeError) as e:
            return _error(400, "bad_request", f"the body is not JSON: {e}")
        if not isinstance(body, dict):
            return _error(400, "bad_request", "the body is a JSON object")
        return body

    def _started(self, session: Session) -> web.Response:
        response = web.json_response({"ok": True, "role": session.role, "name": session.name})
        response.set_cookie(COOKIE, session.token, httponly=True, samesite="Strict", path="/",
                            secure=self.behind_proxy, max_age=max(1, int(session.expires - time.time())))
        return response

    async def login(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        role, name, password = body.get("role"), body.get("name"), body.get("password")
        if set(body) - {"role", "name", "password"} or role not in ROLES \
                or not isinstance(name, str) or not isinstance(password, str):
            return _error(400, "bad_request", 'login with {"role": "player"|"operator", "name": ..., "password": ...}')
        address = self._address(request)
        wait = self.limits.wait(address, f"{role}.{name}")
        if wait > 0:
            return _error(429, "rate_limited", "too many login attempts: wait a while",
                          retry_after_ms=retry_after_ms(wait))
        async with self._hashing:
            right = await asyncio.to_thread(self.passwords.verify, role, name, password)
        if not right:
            self.limits.failed(address, f"{role}.{name}")
            return _error(401, "bad_login", "unknown name or wrong password")
        assert self.sessions is not None
        try:
            session = await self.sessions.login(role, name)
        except TooManySessions as e:
            return _error(503, "unavailable", str(e))
        except Exception as e:          # the room's NATS: down, or refusing
            log.warning("console: %s %s logged in, but NATS refused his connection: %s", role, name, e)
            return _error(503, "unavailable", "the room cannot be reached now")
        return self._started(session)

    async def spectate(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        wait = self.limits.wait(self._address(request), None)
        if wait > 0:
            return _error(429, "rate_limited", "too many new sessions: wait a while", retry_after_ms=retry_after_ms(wait))
        assert self.sessions is not None
        try:
            return self._started(self.sessions.spectate())
        except TooManySessions as e:
            return _error(503, "unavailable", str(e))

    async def logout(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        session = self._session(request)
        if session is not None:
            assert self.sessions is not None
            await self.sessions.logout(session)
        response = web.json_response({"ok": True})
        response.del_cookie(COOKIE, path="/")
        return response

    async def me(self, request: web.Request) -> web.Response:
        session = self._session(request)
        if session is None:
            return _error(401, "no_session", "not logged in")
        return web.json_response({"ok": True, "role": session.role, "name": session.name})

    # ------------------------------------------------------------ the WebSocket

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        session = self._session(request)
        if session is None:
            return _error(401, "no_session", "not logged in")
        if not self._own_origin(request, request.headers.get("Origin")):
            return _error(403, "bad_origin", "a WebSocket from another site's page")
        ws = web.WebSocketResponse(max_msg_size=MAX_BODY, heartbeat=30.0)
        await ws.prepare(request)
        tab = Tab(session, ws)
        session.tabs.add(tab)
        session.seen = time.time()
        writer = asyncio.get_running_loop().create_task(tab.writer())
        running: set[asyncio.Task[None]] = set()
        try:
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    break                   # binary, close, error: the socket ends
                task = asyncio.get_running_loop().create_task(self._one(tab, message.data))
                running.add(task)
                task.add_done_callback(running.discard)
        finally:
            session.tabs.discard(tab)
            session.seen = time.time()
            for task in running:
                task.cancel()
            await tab.forget()
            tab.closing = True
            writer.cancel()
        return ws

    async def _one(self, tab: Tab, text: str) -> None:
        tab.answered(await ops.answer(tab, text))


@web.middleware
async def _headers(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
    response: web.StreamResponse = await handler(request)
    if not response.prepared:
        response.headers.update(HEADERS)
    return response

