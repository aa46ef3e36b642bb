"""How every process runs: SIGTERM or SIGINT stops it, within a bounded time whatever
``serve`` is waiting for, and the outcome becomes the exit code systemd understands.
In this process (or a small child process where the process must end), no servers."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest
from studroom.services.runtime.processes import process
from studroom.services.runtime.settings import Settings

Serve = Callable[[argparse.Namespace, Settings, asyncio.Event], Awaitable[Any]]


def _run(serve: Serve, **bounds: float) -> int:
    bootstrap = SimpleNamespace(HELP="a test process", add_arguments=lambda parser: None,
                                serve=serve)
    return process.run(bootstrap, argparse.Namespace(log_level="WARNING"), **bounds)  # type: ignore[arg-type]


# A process whose serve() does AFTER_STOP once stopped; it prints "serving" when it runs.
HANGING = """
import argparse, asyncio, sys, time
from types import SimpleNamespace
from studroom.services.runtime.processes import process

async def serve(args, settings, stop):
    print("serving", flush=True)
    await stop.wait()
    {after_stop}

bootstrap = SimpleNamespace(HELP="", add_arguments=lambda parser: None, serve=serve, __name__="hanging")
sys.exit(process.run(bootstrap, argparse.Namespace(log_level="WARNING"), grace={grace}, cancel_grace=0.5))
"""


def _hanging(after_stop: str, grace: float, signals: int) -> tuple[int, str, float]:
    """Start HANGING, send it SIGTERM ``signals`` times: its exit code, its log and how
    long it took to exit after the first signal."""
    proc = subprocess.Popen([sys.executable, "-c", HANGING.format(after_stop=after_stop, grace=grace)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "serving\n"
        signalled = time.monotonic()
        for _ in range(signals):
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)
        code = proc.wait(timeout=15)
        return code, proc.communicate()[1], time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()


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


def test_a_service_that_does_not_stop_is_cancelled_after_the_grace_period() -> None:
    cancelled: list[bool] = []

    async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        try:
            await asyncio.sleep(60)     # deaf to stop, as nats.connect to an absent NATS is
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    assert _run(serve, grace=0.2) == 0
    assert cancelled == [True]


def test_a_process_stuck_even_when_cancelled_exits_anyway() -> None:
    # time.sleep holds the event loop: nothing can be cancelled, the deadline ends the process.
    code, log, seconds = _hanging("time.sleep(60)", grace=0.2, signals=1)
    print(f"stuck process exited {seconds:.1f} s after SIGTERM (grace 0.2 s + 0.5 s)")
    assert code == 1
    assert "did not stop" in log and "Traceback" not in log


def test_a_second_signal_exits_at_once() -> None:
    code, log, seconds = _hanging("await asyncio.sleep(60)", grace=30, signals=2)
    print(f"exited {seconds:.1f} s after the first SIGTERM (grace 30 s)")
    assert code == 128 + signal.SIGTERM
    assert "second SIGTERM" in log


def test_an_outage_is_one_line_and_a_bug_shows_its_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    async def unreachable(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
        raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 1)")

    async def bug(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
        raise KeyError("nobody expected this")

    assert _run(unreachable) == 1
    err = capsys.readouterr().err
    assert "ConnectionRefusedError" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert _run(bug) == 1
    assert "Traceback" in capsys.readouterr().err


def test_bad_settings_are_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STUDROOM_DATABASE_URL", "mysql://nobody@nowhere/db")

    async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
        raise AssertionError("serve must not run")

    assert _run(serve) == 2
    err = capsys.readouterr().err
    assert "STUDROOM_DATABASE_URL" in err and "Traceback" not in err
