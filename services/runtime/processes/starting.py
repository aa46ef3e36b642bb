"""A service's start, tried again while NATS or PostgreSQL is not ready yet.

A start (connect, preflight, declare streams, consumers and buckets, open the stores)
meets the servers at their worst moment: a cluster electing its leaders answers
"nats: timeout", a PostgreSQL just started refuses connections.  Such an error is
*transient*: :func:`until_started` closes what the attempt opened and starts again after
a :data:`~..retry.RECONNECT` pause, saying each kind of failure once (not at every
attempt), until the start succeeds or ``stop`` is set.  Anything else ends the start at
once: a :class:`~...wire.declared.Refused` or a usage error (both ``SystemExit``, not
``Exception``), bad credentials, an error of the code.  Once started, a service's own
loops deal with outages.  docs/design/retries.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import nats.errors
import nats.js.errors

from ..arguments import one_line
from ..observability.logs import fields
from ..retry import RECONNECT, Backoff

log = logging.getLogger("studroom.starting")

T = TypeVar("T")

Start = Callable[[contextlib.AsyncExitStack], Awaitable[T]]

# The network's "not there (yet)", as opposed to a missing file or a refused permission.
UNREACHABLE = frozenset({errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.EHOSTUNREACH,
                         errno.ENETUNREACH, errno.ETIMEDOUT, errno.EPIPE})
NATS_NOT_READY = (nats.errors.NoServersError, nats.errors.ConnectionClosedError, nats.errors.StaleConnectionError,
                  nats.errors.NoRespondersError, nats.errors.ConnectionReconnectingError,
                  nats.js.errors.ServiceUnavailableError)
# JetStream's API codes for "not now": "system temporarily unavailable", "cluster can
# not handle request" (no leader yet).  "No suitable peers" (10005) is not among them: it
# also says "more replicas than servers", which no waiting cures.
JETSTREAM_NOT_READY = frozenset({10008, 10009})
# PostgreSQL's operational errors that no waiting cures (said in the server's words).
POSTGRES_REFUSALS = ("authentication failed", "does not exist", "no pg_hba.conf entry", "permission denied")


def transient(error: BaseException) -> bool:
    """Whether ``error`` says a server is not reachable or not ready *yet*."""
    if isinstance(error, (TimeoutError, ConnectionError, socket.gaierror, *NATS_NOT_READY)):
        return True
    if type(error) is OSError:
        return error.errno in UNREACHABLE
    if isinstance(error, nats.js.errors.ServerError):
        return True      # a 500 of the server's own (seen: a consumer re-created while its files were going)
    if isinstance(error, nats.js.errors.APIError):
        return error.err_code in JETSTREAM_NOT_READY
    return _postgres_unavailable(error)


def _postgres_unavailable(error: BaseException) -> bool:
    """psycopg's (or eventsourcing's wrapping of it) OperationalError, unless it is a
    refusal: bad credentials, a missing database or role."""
    import eventsourcing.persistence
    import psycopg

    if not isinstance(error, (psycopg.OperationalError, eventsourcing.persistence.OperationalError,
                              eventsourcing.persistence.InterfaceError)):
        return False
    said = str(error).lower()
    return not any(refusal in said for refusal in POSTGRES_REFUSALS)


async def until_started(name: str, exits: contextlib.AsyncExitStack, start: Start[T],
                        stop: asyncio.Event | None = None, backoff: Backoff = RECONNECT) -> T | None:
    """``await start(attempt)`` until it returns; what it opened (``attempt``'s callbacks)
    is then closed by ``exits``.  A transient error (:func:`transient`) closes the
    attempt and tries again after a pause; any other error goes up.  None if ``stop``
    was set before a start succeeded."""
    said: set[str] = set()
    began, attempts, pauses = time.monotonic(), 0, backoff.pauses()
    while True:
        attempts += 1
        async with contextlib.AsyncExitStack() as opened:
            try:
                started = await start(opened)
            except Exception as error:
                if not transient(error):
                    raise
                _say_once(name, error, said)
            else:
                exits.push_async_exit(opened.pop_all())
                if attempts > 1:
                    log.info("%s started after %d attempts", name, attempts,
                             extra=fields(seconds=round(time.monotonic() - began, 1)))
                return started
        if await _stopped_during(stop, next(pauses)):
            return None


async def _stopped_during(stop: asyncio.Event | None, pause: float) -> bool:
    """Wait ``pause`` seconds, or less if ``stop`` is set: whether it was.  (``asyncio.timeout``
    rather than ``wait_for``: on Python 3.11 the latter can swallow a cancellation.)"""
    if stop is None:
        await asyncio.sleep(pause)
        return False
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(pause):
            await stop.wait()
    return stop.is_set()


def _say_once(name: str, error: Exception, said: set[str]) -> None:
    kind = type(error).__qualname__
    if kind not in said:
        said.add(kind)
        log.warning("%s cannot start yet (%s): trying again", name, one_line(error))
