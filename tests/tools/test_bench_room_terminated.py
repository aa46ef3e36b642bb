"""``bench room`` sent SIGTERM (a timeout, a ``kill``, a CI job cancelled) stops what it
started: its seven services, its embedded servers, its temporary folder; before, it
vanished at once and left the services running, loading whatever ran next.  It then
ends as a process killed by SIGTERM (cli/main.py, ``Terminated``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from studroom.tools import room_cpu

pytestmark = pytest.mark.integration

WAIT = 90.0         # seconds to start servers and services on a loaded machine, never a speed claim
SERVICES = 7        # table, relay, timer, cashier, lobby, history, ledger


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_sigterm_stops_the_services_and_servers_it_started(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    bench = subprocess.Popen([sys.executable, "-W", "ignore", "-m", "studroom.services.cli", "bench", "room",
                              "--tables", "1", "--bots-per-table", "2", "--seconds", "600", "--idle", "0"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + WAIT
        started: set[int] = set()
        while time.monotonic() < deadline and bench.poll() is None:
            started = set(room_cpu.tree(bench.pid, room_cpu.read_processes())) - {bench.pid}
            if sum(" serve " in _command_line(pid) for pid in started) >= SERVICES:
                break
            time.sleep(0.5)
        serving = {pid for pid in started if " serve " in _command_line(pid)}
        assert len(serving) >= SERVICES, f"the services did not start: {bench.poll()=}"
        bench.send_signal(signal.SIGTERM)
        _, errors = bench.communicate(timeout=WAIT)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    assert bench.returncode == -signal.SIGTERM, errors
    assert "terminated" in errors
    left = {pid: _command_line(pid) for pid in started if _alive(pid)}
    assert not left, f"left running: {left}"
    assert not list(tmp_path.glob("studroom-bench-room-*")), "its temporary folder is left"
