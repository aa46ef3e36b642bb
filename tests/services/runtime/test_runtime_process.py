"""How every process runs: SIGTERM or SIGINT stops it, and the outcome becomes the exit
code systemd understands. In this process, no servers."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest
from studroom.services.runtime import process
from studroom.services.runtime.settings import Settings

Serve = Callable[[argparse.Namespace, Settings, asyncio.Event], Awaitable[Any]]


def _run(serve: Serve) -> int:
    bootstrap = SimpleNamespace(HELP="a test process", add_arguments=lambda parser: None,
                                serve=serve)
    return process.run(bootstrap, argparse.Namespace(log_level="WARNING"))  # type: ignore[arg-type]


@pytest.mark.parametrize("sig", process.STOP_SIGNALS)
def test_a_stop_signal_sets_the_event_and_the_handlers_go_afterwards(sig: int) -> None:
    before = signal.getsignal(sig)

    async def main() -> None:
        with process.stop_on_signals() as stop:
            os.kill(os.getpid(), sig)
            await asyncio.wait_for(stop.wait(), 5)

    asyncio.run(main())
    assert signal.getsignal(sig) == before


def test_a_service_stopped_by_sigterm_exits_0() -> None:
    async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(stop.wait(), 5)

    assert _run(serve) == 0


def test_a_failed_service_exits_1() -> None:
    async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
        raise RuntimeError("the database is gone")

    assert _run(serve) == 1


def test_a_usage_error_exits_2() -> None:
    async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
        raise SystemExit("--stores must be at least 1")

    assert _run(serve) == 2
