"""A room that plays, shared by the integration tests that only need one (the
``live_room`` fixture, tests/conftest.py: started on first use, stopped at the end of
the session).

* a NATS server in operator mode of its own: no other test's table service competes
  for its partitions' leases, and only its services answer ``$SRV`` requests there;
* the session's PostgreSQL, with store schemas of its own;
* every service as ``studroom room`` runs them (``Services``): two table-service
  instances on two stores, the relay, the timer, the cashier, the lobby, the history
  and the ledger, each under its own credentials, each serving its metrics on a free
  port.

The services are shared, the tables are not: each test opens tables of its own (its
own table ids) and seats its own bots, so that what it asserts of its tables holds
whatever the tests before it played.  Tests that kill or break a service, or need
other settings (one-second timers, another NATS), keep a room of their own.

``studroom room`` itself runs once a session (the ``room_command`` fixture,
:func:`run_room_command`): on embedded servers of its own in a fresh data folder, the
books' lag behind the stores watched while it plays; the room's test reads its output,
credentials and logs, the ledger's test its lag and books.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
from studroom.projections.ledger.schema import LEDGER_SCHEMA

from studroom.services.auth.authority import Authority
from studroom.services.runtime.processes.supervisor import Services, child_env
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.servers.attach import running_postgres
from studroom.services.runtime.settings import (
    DATA_DIR_VAR,
    DATABASE_URL_VAR,
    METRICS_PORT_VAR,
    NATS_CREDS_VAR,
    NATS_URL_VAR,
)
from studroom.services.store.layout import store_schemas

INSTANCES = 2        # table-service processes ...
STORES = 2           # ... and stores: a table's partition decides both


class LiveRoom:
    """The shared room's servers and services; ``name`` prefixes its processes' names
    and instance ids (``<name>-1``, ``<name>-2``), ``<name>_p`` its schemas."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.name = f"live{uuid.uuid4().hex[:6]}"
        self.folder = Path(tempfile.mkdtemp(prefix="studroom-it-live-"))
        self.nats = EmbeddedNats(self.folder)
        self.services: Services | None = None

    @property
    def url(self) -> str:
        return self.nats.url

    @property
    def authority(self) -> Authority:
        assert self.nats.authority is not None
        return self.nats.authority

    @property
    def schemas(self) -> list[str]:
        return store_schemas(STORES, f"{self.name}_p")

    @property
    def log_dir(self) -> Path:
        return self.folder / "logs"

    def table_ids(self, prefix: str, count: int) -> list[str]:
        """``count`` new table ids of a test (``prefix``: the test's own, unique in the session)."""
        return [f"{prefix}{i:02d}" for i in range(1, count + 1)]

    def pids(self) -> set[str]:
        """The services' process ids (as their ``$SRV.INFO`` metadata says them)."""
        assert self.services is not None
        return {str(proc.pid) for _, proc, _ in self.services.procs}

    def dead(self) -> list[str]:
        assert self.services is not None
        return self.services.dead()

    def start(self) -> None:
        self.nats.start()       # its port, which the services' environment names, is chosen now
        self.services = Services(
            child_env(self.url, self.database_url, self.folder) | {METRICS_PORT_VAR: "0"}, self.log_dir,
            instances=INSTANCES, stores=STORES, timers=True, name=self.name,
            schema_prefix=f"{self.name}_p", authority=self.authority)
        self.services.start()

    def stop(self) -> list[str]:
        """Everything stopped; the problems (a service that exited badly)."""
        try:
            return self.services.stop() if self.services is not None else []
        finally:
            self.nats.stop()
            shutil.rmtree(self.folder, ignore_errors=True)


# ------------------------------------------------------------- one `studroom room` run

ROOM_TABLES = 4
ROOM_BOTS_PER_TABLE = 4
ROOM_SECONDS = 5
ROOM_STORES = ("studroom_p0", "studroom_cashier")      # the room's one table store and the cashier's


class BooksLag:
    """How far the ledger's books are behind the stores, looked at every 0.2 s while a
    room plays on the embedded PostgreSQL of ``data_dir`` (from when it runs)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.samples: list[tuple[float, int, int]] = []      # (when, stored, booked)
        self.stop = threading.Event()

    def watch(self) -> None:
        while not self.stop.wait(0.2):
            conn = self._connect()
            if conn is None:
                continue
            try:
                with conn:
                    while not self.stop.wait(0.2):
                        self._look(conn)
            except psycopg.OperationalError:         # the room stopped its server
                return

    def _connect(self) -> psycopg.Connection | None:
        """A connection to the room's PostgreSQL; None while it is not up yet."""
        url = running_postgres(self.data_dir)
        try:
            return None if url is None else psycopg.connect(url, autocommit=True)
        except psycopg.OperationalError:             # starting
            return None

    def _look(self, conn: psycopg.Connection) -> None:
        try:
            stored = sum(conn.execute(f"SELECT coalesce(max(notification_id), 0) FROM {s}.events")
                         .fetchone()[0] for s in ROOM_STORES)  # type: ignore[index]
            booked = conn.execute(f"SELECT coalesce(sum(position), 0) FROM {LEDGER_SCHEMA}.positions"
                                  ).fetchone()[0]  # type: ignore[index]
        except psycopg.errors.UndefinedTable:         # not created yet
            return
        self.samples.append((time.monotonic(), stored, booked))

    def seconds_behind(self) -> list[float]:
        """For each look: how long until the books held what the stores held then."""
        out = []
        for i, (when, stored, _) in enumerate(self.samples):
            later = next((t for t, _, booked in self.samples[i:] if booked >= stored), None)
            if later is not None:
                out.append(later - when)
        return out


@dataclass
class RoomCommand:
    data_dir: Path
    result: subprocess.CompletedProcess[str]
    lag: BooksLag


def run_room_command(data_dir: Path) -> RoomCommand:
    """``studroom room`` for ROOM_SECONDS on embedded servers of its own in ``data_dir``
    (no server of the environment), the books' lag watched meanwhile."""
    env = {k: v for k, v in os.environ.items() if k not in (NATS_URL_VAR, DATABASE_URL_VAR, NATS_CREDS_VAR)}
    env[DATA_DIR_VAR] = str(data_dir)
    lag = BooksLag(data_dir)
    watcher = threading.Thread(target=lag.watch)
    watcher.start()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "studroom.services.cli", "room", "--tables", str(ROOM_TABLES),
             "--bots-per-table", str(ROOM_BOTS_PER_TABLE), "--for", str(ROOM_SECONDS), "--quiet"],
            env=env, capture_output=True, text=True, timeout=200, check=False)
    finally:
        lag.stop.set()
        watcher.join()
    return RoomCommand(data_dir, result, lag)
