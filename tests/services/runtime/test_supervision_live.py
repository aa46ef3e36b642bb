"""Real services on real servers: a service killed with SIGKILL is started again by
the supervisor and counted; a service whose NATS went away still stops on SIGTERM,
within a bounded time (runtime/process.run)."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from studroom.services.auth.authority import Authority
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.settings import Settings
from studroom.services.runtime.processes.supervisor import SERVE, Services, child_env

pytestmark = pytest.mark.integration

WAIT = 30.0         # seconds a service may take to start (a loaded machine), never a speed claim


def _until(condition: Callable[[], bool], what: str, every: Callable[[], object] = lambda: None) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {WAIT:g} s"
        every()
        time.sleep(0.1)


def test_a_killed_service_is_started_again_and_counted(
    settings: Settings, secure_nats_url: str, authority: Authority, database_url: str
) -> None:
    run = uuid.uuid4().hex[:6]
    log_dir = Path(tempfile.mkdtemp(prefix="studroom-it-supervise-"))
    services = Services(child_env(secure_nats_url, database_url, settings.data_dir), log_dir, instances=1, stores=1,
                        cashier=False, lobby=False, history=False, ledger=False, name=f"itsup{run}",
                        schema_prefix=f"itsup{run}_p", authority=authority)
    table = f"itsup{run}-table-1"
    log = log_dir / f"{table}.log"

    def ready() -> int:
        return log.read_text().count(" ready: ") if log.exists() else 0

    services.start()
    try:
        _until(lambda: ready() == 1, "table service ready")
        first = {name: proc for name, proc, _ in services.procs}[table]
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        _until(lambda: ready() == 2, "table service ready again", every=services.supervise)
        assert services.restarts() == {table: 1}
        assert services.dead() == []
    finally:
        problems = services.stop()
    assert problems == []
    assert f"exited with {-signal.SIGKILL}; starting again" in log.read_text()


def test_a_service_stops_on_sigterm_while_its_nats_is_down(settings: Settings, database_url: str) -> None:
    folder = Path(tempfile.mkdtemp(prefix="studroom-it-nats-down-"))
    nats = EmbeddedNats(folder, auth=False)
    nats.start()
    env = child_env(nats.url, database_url, folder)
    relay = subprocess.Popen([*SERVE, "relay", "--schema", f"itdown{uuid.uuid4().hex[:6]}_p0"], env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log: list[str] = []
    reader = threading.Thread(target=lambda: log.extend(relay.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        time.sleep(2)                           # it connects (or is still starting)
        nats.stop()
        # it says the outage once it runs (its signal handlers are in place by then)
        _until(lambda: any("NATS" in line for line in log), "word of the outage")
        signalled = time.monotonic()
        relay.send_signal(signal.SIGTERM)
        code = relay.wait(timeout=15)
        print(f"the relay exited {time.monotonic() - signalled:.1f} s after SIGTERM, NATS down")
    finally:
        if relay.poll() is None:
            relay.kill()
        nats.stop()
    reader.join(timeout=5)
    assert code == 0, "".join(log)
    assert "Traceback" not in "".join(log)
