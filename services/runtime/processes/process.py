"""One way to run a service process: logging, signals, the event loop, the exit code.

Every process of the room (``studroom serve table|relay|timer|bot``) is a
``bootstrap`` module with three names, and this module runs it:

- ``HELP``: one line for ``studroom serve --help``;
- ``add_arguments(parser)``: the process's own options (``--log-level`` is added here);
- ``async serve(args, settings, stop)``: build the adapters (the composition root),
  run until ``stop`` is set, clean up.

``run`` sets ``stop`` on SIGTERM or SIGINT (``stop_on_signals``, which the room uses
too), bounds the stop (``serve`` is cancelled after ``STOP_GRACE``, the process ends
``CANCEL_GRACE`` later whatever happens, a second signal ends it at once), and turns
the outcome into an exit code that systemd understands: 0 after a stop, 1 when
``serve`` failed (a fatal error, one log line: systemd restarts the unit), 2 for a
usage error (``SystemExit`` with a message, bad settings), 128 + the signal after a
second one.  ``connect`` makes the NATS connections, an outage said once.
docs/design/cli.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import nats.errors

from ...wire import subjects
from ..arguments import one_line
from ..observability import logs
from ..settings import Settings, log_level_from_env, nats_ca_from_env
from . import observe

log = logging.getLogger("studroom")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
STOP_GRACE = 3.0       # seconds ``serve`` has to finish after a stop signal, then it is cancelled
CANCEL_GRACE = 2.0     # seconds more for the cancelled ``serve``, then the process exits anyway
OUTSIDE = {"psycopg", "psycopg_pool", "sqlalchemy", "nats"}   # their errors come from the servers


class Bootstrap(Protocol):
    """What a process's ``bootstrap`` module provides (see the module docstring)."""

    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def serve(self, args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> Awaitable[Any]: ...


def add_arguments(parser: argparse.ArgumentParser, bootstrap: Bootstrap) -> None:
    """The process's own options, then the ones every process has."""
    bootstrap.add_arguments(parser)
    parser.add_argument("--log-level", default=log_level_from_env(),
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"), type=str.upper,
                        help="log level (default INFO, or STUDROOM_LOG_LEVEL)")
    observe.add_arguments(parser)          # --log-format, --metrics-port


def configure_logging(level: str, log_format: str | None = None) -> None:
    logs.configure(level, log_format)       # key=value or JSON lines, secrets masked (logs.py)
    # nats-py logs a traceback for every failed reconnect; our services log the outage once.
    logging.getLogger("nats").setLevel(logging.CRITICAL)
    logging.getLogger("asyncio").addFilter(_not_half_open)


def _not_half_open(record: logging.LogRecord) -> bool:
    """asyncio warns at the end of every TLS connection that nats-py's protocol asks to
    stay half open (TLS cannot): noise, one line per closed connection."""
    return "eof_received" not in record.getMessage()


@contextmanager
def stop_on_signals(first: Callable[[], None] | None = None,
                    again: Callable[[int], None] | None = None) -> Iterator[asyncio.Event]:
    """An event set by SIGTERM or SIGINT while inside (in a running event loop);
    ``first()`` is called on the first signal, ``again(signal)`` on every other."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(sig: int) -> None:
        if not stop.is_set() and first is not None:
            first()
        elif stop.is_set() and again is not None:
            again(sig)
        stop.set()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        yield stop
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)


def run(bootstrap: Bootstrap, args: argparse.Namespace, *, grace: float = STOP_GRACE,
        cancel_grace: float = CANCEL_GRACE) -> int:
    """Run ``bootstrap.serve`` until SIGTERM or SIGINT; the process's exit code.

    After the signal ``serve`` has ``grace`` seconds to finish, then it is cancelled;
    if even that does not end the process within ``cancel_grace`` more seconds, it
    exits at once (code 1).  A second signal exits at once (128 + the signal)."""
    configure_logging(args.log_level, getattr(args, "log_format", None))
    name = getattr(bootstrap, "__name__", "the service").removesuffix(".bootstrap").rsplit(".", 1)[-1]
    debug = getattr(args, "debug", False)
    try:
        settings = Settings.from_env()
    except ValueError as error:
        log.error("%s: %s", name, error)
        return 2
    serve: Callable[[argparse.Namespace, Settings, asyncio.Event], Awaitable[Any]] = bootstrap.serve
    deadline = _Deadline(grace + cancel_grace, name)

    async def serving(stop: asyncio.Event) -> SystemExit | None:
        try:
            await serve(args, settings, stop)
        except SystemExit as exit_:
            return exit_        # returned: raised in a task, it would stop the loop mid-way
        return None

    async def main() -> SystemExit | None:
        with stop_on_signals(first=deadline.start, again=_exit_at_once) as stop:
            task = asyncio.create_task(serving(stop))
            return await _until_stopped(task, stop, grace, name)

    try:
        exit_ = asyncio.run(main())
    except Exception as error:
        expected = not debug and _outage(error)
        log.error("%s failed: %s", name, one_line(error), exc_info=None if expected else error)
        return 1
    finally:
        deadline.cancel()
    if exit_ is not None and isinstance(exit_.code, str):
        log.error("%s", exit_.code)
        return 2
    return 0 if exit_ is None else int(exit_.code or 0)


async def _until_stopped(task: asyncio.Task[Any], stop: asyncio.Event, grace: float, name: str) -> Any:
    """Wait for ``task``; once ``stop`` is set, ``grace`` seconds at most, then cancel it."""
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if not task.done():
        await asyncio.wait({task}, timeout=grace)
    if not task.done():
        log.warning("%s did not stop within %g s of the signal: cancelling it", name, grace)
        task.cancel()
        await asyncio.wait({task})
    return None if task.cancelled() else task.result()      # its exception, if it failed


class _Deadline:
    """The hard bound on a stop: a thread that ends the process if it is still there."""

    def __init__(self, seconds: float, name: str) -> None:
        self.timer = threading.Timer(seconds, self._expire, (seconds, name))
        self.timer.daemon = True

    def start(self) -> None:
        self.timer.start()

    def cancel(self) -> None:
        self.timer.cancel()

    @staticmethod
    def _expire(seconds: float, name: str) -> None:
        log.error("%s did not stop within %g s even when cancelled: exiting", name, seconds)
        _exit(1)


def _exit_at_once(sig: int) -> None:
    log.warning("second %s: exiting at once", signal.Signals(sig).name)
    _exit(128 + sig)


def _exit(code: int) -> None:
    """End the process now (no clean-up), the log written out first."""
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    os._exit(code)


def _outage(error: BaseException) -> bool:
    """An error of the world outside (a server away, a file missing), not of the code:
    its one line says it all, no traceback needed."""
    return isinstance(error, OSError | TimeoutError) or type(error).__module__.split(".")[0] in OUTSIDE


class NatsOutage:
    """A connection's callbacks that say a lost NATS once, not at every attempt to
    reconnect (nats-py would log a traceback every ``reconnect_time_wait``); an
    error that repeats is said once too.  ``level``: of these lines (a connection that
    does not reconnect leaves the saying to its owner: DEBUG)."""

    def __init__(self, name: str, level: int = logging.WARNING) -> None:
        self.name = name
        self.level = level
        self.client: Any = None
        self.since: float | None = None       # lost since (monotonic)
        self.said: str | None = None          # the last error said
        self.refused: str | None = None       # why the server last refused us, if it did

    async def error(self, error: Exception) -> None:
        if _refused(error):
            self.refused = "authorization violation"
        if _lost(error):
            self._lost(f"NATS unreachable ({one_line(error)}); trying again")
        elif one_line(error) != self.said:
            self.said = one_line(error)
            log.log(self.level, "%s: NATS: %s", self.name, self.said)

    async def disconnected(self) -> None:
        if not (self.client is not None and self.client.is_closed):
            self._lost("disconnected from NATS; reconnecting")

    async def reconnected(self) -> None:
        if self.since is not None:
            log.log(self.level, "%s: reconnected to NATS after %.1f s", self.name, time.monotonic() - self.since)
        self.since = self.said = None

    def _lost(self, what: str) -> None:
        if self.since is None:
            self.since = time.monotonic()
            log.log(self.level, "%s: %s", self.name, what)


def _lost(error: BaseException) -> bool:
    """Whether ``error`` means the server cannot be reached."""
    import nats.errors

    return isinstance(error, OSError | TimeoutError | nats.errors.NoServersError | nats.errors.ConnectionClosedError
                      | nats.errors.StaleConnectionError | nats.errors.UnexpectedEOF | nats.errors.TimeoutError)


def _refused(error: BaseException) -> bool:
    """Whether ``error`` is the server refusing our credentials (nats-py says it to the
    error callback as a plain error while connecting, as ``AuthorizationError`` after)."""
    return isinstance(error, nats.errors.AuthorizationError) or "authorization violation" in str(error).lower()


class NatsRefused(nats.errors.NoServersError):
    """No server let the connection in, and one said why: nats-py's own error says only
    "no servers available", its cause went to the error callback.  A ``NoServersError``
    still, for whoever waits for a NATS to come up."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause

    def __str__(self) -> str:
        return f"the NATS server refused the connection: {self.cause}"


async def connect(servers: str, name: str, *, creds: str | os.PathLike[str] | None = None,
                  **options: Any) -> Any:
    """A NATS connection as every service makes it: reconnect for ever, quickly, and
    say an outage once (:class:`NatsOutage`; callbacks in ``options`` are called after
    its own).

    ``servers`` is one URL or several separated by commas (a cluster).  With ``creds``
    (a ``.creds`` file, see :mod:`.credentials`) the connection authenticates as that
    file's identity and receives replies on the identity's own inbox
    (``_INBOX.<role>.<name>``, the only one its permissions let it read).  With a CA
    (``STUDROOM_NATS_CA``) or ``tls://`` URLs it speaks TLS from its first byte
    (:func:`tls_options`).  A server that refuses the credentials (or their absence):
    :class:`NatsRefused`, which says so."""
    from nats.aio.client import Client

    from ...auth.authority import identity_of

    settings: dict[str, Any] = {"max_reconnect_attempts": -1, "reconnect_time_wait": 0.5}
    if creds is not None:
        role, identity = identity_of(Path(creds))
        settings |= {"user_credentials": str(creds), "inbox_prefix": subjects.inbox_prefix(role, identity)}
    settings |= tls_options(servers)
    outage = NatsOutage(name, logging.WARNING if options.get("allow_reconnect", True) else logging.DEBUG)
    following: list[asyncio.Task[None]] = []

    async def closed() -> None:          # the credentials' follower ends with its connection
        for task in following:
            task.cancel()

    for key, own in (("error_cb", outage.error), ("disconnected_cb", outage.disconnected),
                     ("reconnected_cb", outage.reconnected), ("closed_cb", closed)):
        settings[key] = _then(own, options.pop(key, None))
    settings.update(options)
    outage.client = client = Client()
    try:
        await client.connect(servers.split(","), name=name, **settings)
    except nats.errors.NoServersError as error:
        if outage.refused is None:
            raise
        raise NatsRefused(outage.refused) from error
    if creds is not None and settings.get("allow_reconnect", True):
        from .credentials import follow

        following.append(follow(client, Path(creds)))   # reconnects with renewed credentials before they end
    return client


async def connect_door(servers: str, settings: Settings, service: str, name: str, **options: Any) -> Any:
    """The connection on which ``service`` serves requests: as its door identity
    (``service.<service>-door``, :func:`.credentials.door_credentials`), which may
    publish replies only, so no reply subject a client chose meets the service's own
    powers (docs/design/trust.md, "Replies go only to the asker")."""
    from .credentials import door_credentials

    return await connect(servers, f"{name}-door", creds=door_credentials(settings, service), **options)


async def drain(nc: Any) -> None:
    """Drain a connection on the way out, whatever state it is in (the process ends anyway)."""
    with contextlib.suppress(Exception):
        await nc.drain()


def tls_options(servers: str, ca: Path | None = None) -> dict[str, Any]:
    """nats-py's TLS options for ``servers``: none for plain ``nats://`` URLs without a
    CA; else the servers' certificates checked against ``ca`` (default
    ``STUDROOM_NATS_CA``; none: the system's CAs) and TLS before the server's first
    word (``tls_handshake_first``, deploy/nats/studroom.conf): nats-py would otherwise
    go on in plain text with a server, or a middleman, that does not ask for TLS."""
    import ssl

    ca = ca or nats_ca_from_env()
    if ca is None and not any(url.strip().startswith("tls://") for url in servers.split(",")):
        return {}
    return {"tls": ssl.create_default_context(cafile=None if ca is None else str(ca)), "tls_handshake_first": True}


def _then(first: Callable[..., Awaitable[None]],
          then: Callable[..., Awaitable[None]] | None) -> Callable[..., Awaitable[None]]:
    if then is None:
        return first

    async def both(*args: Any) -> None:
        await first(*args)
        await then(*args)

    return both
