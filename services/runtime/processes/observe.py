"""What a running process tells its room's monitoring: NATS micro discovery and stats,
a Prometheus metrics endpoint, a health endpoint.

``serve()`` of each process starts one :class:`Observer` with :func:`start` (one
line); the process then hands it collectors (:meth:`Observer.add`, metrics.py) as
its parts come up.  The observer keeps a NATS connection of its own (as the
process's service door, ``service.<service>-door``, which may publish replies only; made in the background, retried for ever: a process
never waits on it) on which a ``nats.micro`` service named ``studroom-<service>``
answers ``$SRV.PING``, ``$SRV.INFO`` and ``$SRV.STATS`` (each instance: its
instance id, pid and metrics address in the metadata; its readings in the health
endpoint's stats) and ``studroom.health.<service>.operator.<name>`` (one instance of the
queue group; only to the asking operator's own inbox, within his quota: wire/door.py).
With ``--metrics-port`` (0: any free port) it serves ``/metrics`` and ``/healthz`` on
127.0.0.1.  docs/design/observability.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from ...wire import subjects
from ...wire.door import Door, door_metrics, identified
from ..observability.logs import FORMATS, fields
from ..observability.metrics import Collect, Poll, Registry, gauge, log_fields
from ..retry import RECONNECT
from ..servers.attach import nats_url
from ..settings import Settings, log_format_from_env, metrics_port_from_env

log = logging.getLogger("studroom.observe")

HTTP_TIMEOUT = 5.0
CLOSE_SECONDS = 1.0

Readiness = Callable[[], Mapping[str, Any]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every ``studroom serve`` process has for its logs and metrics."""
    parser.add_argument("--log-format", choices=FORMATS, default=log_format_from_env(),
                        help="text (key=value, default) or json lines (or STUDROOM_LOG_FORMAT)")
    parser.add_argument("--metrics-port", type=int, default=metrics_port_from_env(), metavar="PORT",
                        help="serve /metrics and /healthz on 127.0.0.1:PORT (0: any free port; "
                             "default off, or STUDROOM_METRICS_PORT)")


def version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("studroom")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


class Observer:
    """One process's discovery, stats, metrics and health (see the module docstring)."""

    def __init__(self, service: str, instance: str, *, settings: Settings | None = None,
                 metrics_port: int | None = None) -> None:
        self.service = subjects.check_name(service)
        self.instance = instance
        self.settings = settings
        self.metrics_port = metrics_port
        self.registry = Registry(service=service, instance=instance)
        self.readiness: list[Readiness] = []
        self.started = time.time()
        self.nc: Any = None
        self.micro: Any = None
        self.http: asyncio.Server | None = None
        self.metrics_url: str | None = None
        self._stop: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.doors: list[Door] = []          # every responder's of this process (their metrics)
        self.door = self.responder(Door("health", subjects.health_sender, identities=True))   # see _discovery
        self.registry.add(door_metrics(lambda: self.doors))
        self.registry.add(lambda: [gauge("up_seconds", "seconds since the process started",
                                         round(time.time() - self.started, 3))])
        self.registry.add(lambda: [gauge("ready", "1 when every part of the process is ready (its health's ok)",
                                         float(self.health()["ok"]))])

    # -- what the process hands in

    def add(self, collect: Collect) -> None:
        self.registry.add(collect)

    def poll(self, poll: Poll) -> None:
        self.registry.poll(poll)
        if self._stop is not None:
            self._tasks.append(asyncio.get_running_loop().create_task(poll.run(self._stop)))

    def responder(self, door: Door) -> Door:
        """A responder's door, counted in the process's metrics."""
        self.doors.append(door)
        return door

    def ready(self, readiness: Readiness) -> None:
        """A part's readiness details; ``{"ready": False, ...}`` makes the process unhealthy."""
        self.readiness.append(readiness)

    def health(self) -> dict[str, Any]:
        details: dict[str, Any] = {"service": self.service, "instance": self.instance}
        ok = True
        for readiness in self.readiness:
            part = dict(readiness())
            ok = ok and bool(part.pop("ready", True))
            details |= part
        return {"ok": ok, **details}


    # -- running

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until ``stop``: the metrics endpoint, then discovery once NATS answers."""
        self._stop = stop
        loop = asyncio.get_running_loop()
        self._tasks += [loop.create_task(p.run(stop)) for p in self.registry.polls]
        try:
            if self.metrics_port is not None:
                self.http = await asyncio.start_server(self._serve_http, "127.0.0.1", self.metrics_port)
                self.metrics_url = f"http://127.0.0.1:{self.http.sockets[0].getsockname()[1]}/metrics"
                log.info("metrics endpoint", extra=fields(url=self.metrics_url, instance=self.instance))
            if self.settings is not None:
                await self._discovery(stop)
            await stop.wait()
        finally:
            await self.close()

    async def close(self) -> None:
        log.info("stats", extra=fields(**log_fields(self.registry.metrics())))
        for task in self._tasks:
            task.cancel()
        if self.nc is not None:              # its subscriptions, the micro service's, go with it
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_SECONDS):
                    await self.nc.close()
        if self.http is not None:
            self.http.close()
            with contextlib.suppress(Exception):
                await self.http.wait_closed()

    async def _discovery(self, stop: asyncio.Event) -> None:
        """Connect (again and again until it works or ``stop``) and add the micro service."""
        from nats import micro

        from .credentials import door_credentials
        from .process import connect

        assert self.settings is not None
        pauses = RECONNECT.pauses()
        while not stop.is_set():
            url = nats_url(self.settings)
            try:
                if url is None:
                    raise ConnectionError("no NATS yet")
                self.nc = await connect(url, f"studroom-{self.service}-observe-{self.instance}",
                                        creds=door_credentials(self.settings, self.service),
                                        max_reconnect_attempts=-1, connect_timeout=2)
                break
            except Exception as error:  # noqa: BLE001 (NATS away: the process runs on; try again)
                log.debug("discovery: cannot connect: %r", error)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), next(pauses))
        if stop.is_set():
            return
        self.door.identities = identified(self.nc)
        metadata = {"instance": self.instance, "pid": str(os.getpid())}
        if self.metrics_url:
            metadata["metrics"] = self.metrics_url
        self.micro = await micro.add_service(
            self.nc, name=f"studroom-{self.service}", version=version(), metadata=metadata,
            description=f"studroom {self.service} {self.instance}",
            stats_handler=lambda _endpoint: self.registry.readings())
        await self.micro.add_endpoint(name="health", subject=subjects.health_asked(self.service),
                                      handler=self._answer_health)

    async def _answer_health(self, request: Any) -> None:
        # the micro Request hides its message, whose reply subject the door checks
        if await self.door.enter(request._msg) is not None:
            await request.respond(json.dumps(self.health()).encode())

    async def _serve_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await asyncio.wait_for(reader.readline(), HTTP_TIMEOUT)).decode("latin-1").split()
            accept = ""
            while (line := await asyncio.wait_for(reader.readline(), HTTP_TIMEOUT)) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "accept":
                    accept = value.strip()
            status, kind, body = self._respond(request, accept)
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n")
            writer.write(head.encode() + (b"" if request[:1] == ["HEAD"] else body))
            await writer.drain()
        except (TimeoutError, ConnectionError, UnicodeDecodeError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _respond(self, request: list[str], accept: str) -> tuple[str, str, bytes]:
        """Status, content type and body of a GET (a HEAD: the same, sent without the body)."""
        if len(request) < 2 or request[0] not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"GET or HEAD only\n"
        path = request[1].split("?")[0]
        if path == "/metrics":
            body, kind = self.registry.exposition(accept)
            return "200 OK", kind, body
        if path == "/healthz":
            health = self.health()
            status = "200 OK" if health["ok"] else "503 Service Unavailable"
            return status, "application/json", json.dumps(health).encode()
        return "404 Not Found", "text/plain", b"/metrics or /healthz\n"


def start(args: argparse.Namespace, settings: Settings, service: str, stop: asyncio.Event,
          instance: str | None = None) -> Observer:
    """An observer of this process, running until ``stop`` (call from ``serve``)."""
    observer = Observer(service, instance or getattr(args, "instance_id", None) or default_instance(),
                        settings=settings, metrics_port=getattr(args, "metrics_port", None))
    task = asyncio.get_running_loop().create_task(observer.run(stop), name=f"observe-{service}")
    task.add_done_callback(_log_failure)
    return observer


def default_instance() -> str:
    """``<host>-<pid>`` as a name (what the services call themselves when not told)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"{socket.gethostname()}-{os.getpid()}")[-64:]


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("observability stopped: %r", task.exception())
