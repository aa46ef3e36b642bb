"""A service's start tried again while a server is not ready (``starting.until_started``):
a transient NATS or PostgreSQL error is said once per kind and the start goes on; a
refusal, bad credentials or a bug end it at once.  No servers: the errors are made here."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
from types import SimpleNamespace
from typing import Any

import nats.errors
import nats.js.errors
import psycopg
import pytest
from studroom.services.runtime.processes import process
from studroom.services.runtime.processes.starting import transient, until_started
from studroom.services.runtime.retry import Backoff
from studroom.services.runtime.settings import Settings
from studroom.services.wire.declared import Refused

QUICK = Backoff(first=0.001, longest=0.002)


class FlakyStart:
    """A start that fails with ``failures`` (one per attempt, in order), then returns "up";
    it counts its attempts and what each attempt closed."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.attempts = 0
        self.closed = 0

    async def __call__(self, opened: contextlib.AsyncExitStack) -> str:
        self.attempts += 1
        opened.callback(self._close)
        if self.failures:
            raise self.failures.pop(0)
        return "up"

    def _close(self) -> None:
        self.closed += 1


def _start(start: FlakyStart, stop: asyncio.Event | None = None) -> tuple[Any, int]:
    """Run ``until_started`` with ``start``: what it returned, and how many attempts were
    closed before the outer stack closed."""
    async def main() -> tuple[Any, int]:
        async with contextlib.AsyncExitStack() as exits:
            started = await until_started("test", exits, start, stop, backoff=QUICK)
            return started, start.closed
    return asyncio.run(main())


def test_transient_errors_are_retried_and_said_once_per_kind(caplog: pytest.LogCaptureFixture) -> None:
    start = FlakyStart(nats.errors.TimeoutError(), nats.errors.TimeoutError(), nats.errors.TimeoutError(),
                       psycopg.OperationalError("connection refused"), ConnectionRefusedError())
    with caplog.at_level(logging.INFO, logger="studroom.starting"):
        started, closed_before_end = _start(start)
    assert started == "up" and start.attempts == 6
    assert closed_before_end == 5                   # each failed attempt's, not the one that started
    assert start.closed == 6                        # ... which the caller's stack closed at its end
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3, warnings             # TimeoutError, OperationalError, ConnectionRefusedError
    assert "nats: timeout" in warnings[0]
    assert any("started after 6 attempts" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("error", [
    Refused("the NATS account has no command subject mapping"),
    SystemExit("usage: bad option"),
    nats.errors.AuthorizationError(),
    psycopg.OperationalError('password authentication failed for user "studroom"'),
    FileNotFoundError(errno.ENOENT, "no such file", "service.creds"),
    ValueError("a bug"),
])
def test_a_refusal_bad_credentials_or_a_bug_end_the_start_at_once(error: BaseException) -> None:
    start = FlakyStart(error, error)
    with pytest.raises(type(error)):
        _start(start)
    assert start.attempts == 1 and start.closed == 1


def test_a_stop_while_retrying_ends_the_start_without_a_service() -> None:
    stop = asyncio.Event()
    stop.set()
    start = FlakyStart(nats.errors.NoServersError())
    assert _start(start, stop) == (None, 1)
    assert start.attempts == 1


@pytest.mark.parametrize(("error", "is_transient"), [
    (TimeoutError(), True),
    (nats.errors.TimeoutError(), True),
    (nats.errors.NoRespondersError(), True),
    (OSError(errno.EHOSTUNREACH, "no route to host"), True),
    (OSError(errno.EACCES, "permission denied"), False),
    (psycopg.OperationalError("server closed the connection unexpectedly"), True),
    (psycopg.OperationalError('database "studroom" does not exist'), False),
    (nats.errors.AuthorizationError(), False),
    (nats.js.errors.APIError(code=500, err_code=10008, description="JetStream system temporarily unavailable"), True),
    (nats.js.errors.BadRequestError(code=400, err_code=10005, description="no suitable peers for placement"), False),
    (nats.js.errors.ServerError(code=500, err_code=10012,
                                description="obs/studroom_lobby_lobby-a/meta.inf.tmp: no such file or directory"), True),
])
def test_what_is_transient(error: BaseException, is_transient: bool) -> None:
    assert transient(error) is is_transient


def _process_exit(*failures: BaseException) -> tuple[int, FlakyStart]:
    """A process (``process.run``) whose serve starts with ``until_started``: its exit code."""
    start = FlakyStart(*failures)

    async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
        async with contextlib.AsyncExitStack() as exits:
            assert await until_started("test", exits, start, stop, backoff=QUICK) == "up"

    bootstrap = SimpleNamespace(HELP="a test process", add_arguments=lambda parser: None, serve=serve)
    return process.run(bootstrap, argparse.Namespace(log_level="WARNING")), start  # type: ignore[arg-type]


def test_a_service_whose_start_meets_a_nats_timeout_starts_instead_of_exiting() -> None:
    code, start = _process_exit(*[nats.errors.TimeoutError()] * 4)
    assert code == 0 and start.attempts == 5


def test_a_service_refused_at_start_exits_2_at_once() -> None:
    code, start = _process_exit(Refused("JetStream is not enabled for this account"))
    assert code == 2 and start.attempts == 1
