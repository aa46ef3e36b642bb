"""PostgreSQL comes back, the store comes back: the embedded server starts again
after its postmaster was killed (kill -9, backends left running, a stale
``postmaster.pid``), and a store user writes again soon after the database answers.
The seconds it took are printed, never asserted (the bound below only ends a hang)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import msgspec
import psycopg
import pytest
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.store.port import VersionConflict
from studroom.services.store.postgres import PostgresEventStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

HANG = 30.0     # seconds: a store user still not writing by then is stuck


class Beat(msgspec.Struct, frozen=True, tag="beat"):
    n: int


class Writer:
    """Appends an event every few milliseconds from a thread of its own, noting when
    each append succeeded."""

    def __init__(self, store: PostgresEventStore) -> None:
        self.store, self.version, self.ok_at, self.failures = store, 0, 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.store.append([("beat", self.version, [Beat(self.version)])])
            except VersionConflict:                  # written, but the answer was lost
                self.version = len(self.store.load("beat"))
                continue
            except Exception:   # noqa: BLE001 (the database is away: try again)
                self.failures += 1
            else:
                self.version += 1
                self.ok_at = time.monotonic()
            time.sleep(0.01)

    def resumed_after(self, since: float) -> float:
        deadline = since + HANG
        while self.ok_at <= since and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.ok_at > since, f"no append succeeded within {HANG}s of the database answering"
        return self.ok_at - since

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _busy_backend(url: str) -> None:
    """A backend busy in a query: it outlives a killed postmaster (orphaned)."""
    def run() -> None:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("SELECT count(*) FROM generate_series(1, 10000000000)")
        except psycopg.Error:
            pass
    threading.Thread(target=run, daemon=True).start()
    time.sleep(0.3)


def test_killed_postmaster_comes_back_and_the_store_resumes(private_dir: Path) -> None:
    server = EmbeddedPostgres(private_dir).start()
    store = PostgresEventStore(server.url, schema="restarts", pool_size=2, max_overflow=2)
    writer = Writer(store)
    again = EmbeddedPostgres(private_dir)                # a new process on the same folder
    other = subprocess.Popen(["sleep", "60"])
    try:
        while writer.version < 5:
            time.sleep(0.01)
        _busy_backend(server.url)
        os.kill(server.pid, signal.SIGKILL)            # the postmaster alone: its backends stay
        server.stop()                                  # (dead already: lets go of the folder)
        time.sleep(1)                                  # the database is away for a while
        again.start()
        assert again.port == server.port
        up = time.monotonic()
        print(f"\na store user wrote again {writer.resumed_after(up):.2f}s after the killed database answered")
        # a clean stop; its postmaster.pid left behind names a pid that is someone else's now
        again.stop()
        pid_file = again.pgdata / "postmaster.pid"
        pid_file.write_text(f"{other.pid}\n{again.pgdata}\n0\n{again.port}\n\n127.0.0.1\n  0  0\nready\n")
        time.sleep(1)
        again.start()
        up = time.monotonic()
        print(f"a store user wrote again {writer.resumed_after(up):.2f}s after the stopped database answered")
        assert other.poll() is None                    # never touched
        beats = [e.n for e in store.load("beat")]
        assert beats == list(range(len(beats))) and len(beats) >= 5    # nothing lost, nothing twice
    finally:
        writer.stop()
        store.close()
        again.stop()
        other.kill()
        other.wait()
