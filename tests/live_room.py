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
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path

from studroom.services.auth.authority import Authority
from studroom.services.runtime.processes.supervisor import Services, child_env
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.settings import METRICS_PORT_VAR
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
