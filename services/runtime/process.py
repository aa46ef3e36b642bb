"""One way to run a service process: logging, signals, the event loop, the exit code.

Every process of the room (``studroom serve table|relay|timer|bot``) is a
``bootstrap`` module with three names, and this module runs it:

- ``HELP``: one line for ``studroom serve --help``;
- ``add_arguments(parser)``: the process's own options (``--log-level`` is added here);
- ``async serve(args, settings, stop)``: build the adapters (the composition root),
  run until ``stop`` is set, clean up.

``run`` sets ``stop`` on SIGTERM or SIGINT (``stop_on_signals``, which the room uses
too), and turns the outcome into an exit code that systemd understands: 0 after a
clean stop, 1 when ``serve`` failed (a fatal error: systemd restarts the unit), 2 for
a usage error (``SystemExit`` with a message).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ..wire import subjects
from .settings import Settings, log_level_from_env

log = logging.getLogger("studroom")

LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


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


def configure_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO), format=LOG_FORMAT)
    # nats-py logs a traceback for every failed reconnect; our services log the outage once.
    logging.getLogger("nats").setLevel(logging.CRITICAL)


@contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """An event set by SIGTERM or SIGINT while inside (in a running event loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)


def run(bootstrap: Bootstrap, args: argparse.Namespace) -> int:
    """Run ``bootstrap.serve`` until SIGTERM or SIGINT; the process's exit code."""
    configure_logging(args.log_level)
    serve: Callable[[argparse.Namespace, Settings, asyncio.Event], Awaitable[Any]] = bootstrap.serve

    async def main() -> None:
        with stop_on_signals() as stop:
            await serve(args, Settings.from_env(), stop)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return 0
    except SystemExit as exit_:
        if isinstance(exit_.code, str):
            log.error("%s", exit_.code)
            return 2
        return exit_.code or 0
    except Exception:
        log.exception("%s failed", getattr(bootstrap, "__name__", "the service"))
        return 1
    return 0


async def connect(servers: str, name: str, *, creds: str | os.PathLike[str] | None = None,
                  **options: Any) -> Any:
    """A NATS connection as every service makes it: reconnect for ever, quickly.

    ``servers`` is one URL or several separated by commas (a cluster).  With ``creds``
    (a ``.creds`` file, see :mod:`.credentials`) the connection authenticates as that
    file's identity and receives replies on the identity's own inbox
    (``_INBOX.<role>.<name>``, the only one its permissions let it read)."""
    import nats

    from ..auth.authority import identity_of

    settings: dict[str, Any] = {"max_reconnect_attempts": -1, "reconnect_time_wait": 0.5}
    if creds is not None:
        role, identity = identity_of(Path(creds))
        settings |= {"user_credentials": str(creds), "inbox_prefix": subjects.inbox_prefix(role, identity)}
    settings.update(options)
    return await nats.connect(servers.split(","), name=name, **settings)
