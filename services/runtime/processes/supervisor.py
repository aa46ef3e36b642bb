"""The room's services as child processes: ``studroom serve table|relay|timer|cashier``,
each in its own session (Ctrl-C reaches only the parent) with its log in a folder,
started again after a :data:`~..retry.RESTART` pause when one dies (``supervise``,
which the room calls), stopped
in order with SIGTERM.  Each connects to NATS as its own service identity
(``STUDROOM_NATS_CREDS``, issued by the room's Authority).  docs/design/room.md."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import IO

from ...auth.authority import Authority
from ...store.layout import store_schemas
from ..retry import RESTART
from ..settings import NATS_CREDS_VAR, Settings

SERVE = (sys.executable, "-m", "studroom.services.cli", "serve")
CONSOLE = "console"       # holds no identity of its own: it connects in each person's name (console.md)


def _service(command: list[str]) -> str:
    """The service a ``studroom serve`` command line runs."""
    return command[len(SERVE)]


def child_env(nats_url: str, database_url: str, data_dir: Path,
              store_urls: Mapping[int, str] | None = None) -> dict[str, str]:
    """This process's environment, pointed at these servers (``store_urls``: stores
    elsewhere than ``database_url``), unbuffered output."""
    env = Settings(nats_url, database_url, data_dir, store_urls=tuple(sorted((store_urls or {}).items()))).to_env()
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


HEALTHY_AFTER = 60.0     # a child that lived this long starts again after RESTART's first pause


@dataclass
class Life:
    """A child's restarts: how many, and when the dead child starts again (the pauses
    of :data:`~..retry.RESTART`: 0.5 s doubling to 10 s, jittered, from the first
    again once the child lived :data:`HEALTHY_AFTER`)."""

    command: list[str]
    since: float                       # (monotonic) started
    restarts: int = 0
    again_at: float | None = None      # dead: start again then
    pauses: Iterator[float] = field(default_factory=RESTART.pauses, repr=False)

    def due(self, now: float, exit_code: int, log_file: IO[bytes]) -> bool:
        """The child is dead: whether to start it again now (the first time it is seen
        dead, its pause begins and its log says so)."""
        if self.again_at is None:
            if now - self.since >= HEALTHY_AFTER:
                self.pauses = RESTART.pauses()
            pause = next(self.pauses)
            self.again_at = now + pause
            log_file.write(f"=== exited with {exit_code}; starting again in {pause:.2f} s\n".encode())
            log_file.flush()
        return now >= self.again_at

    def started(self, now: float) -> None:
        self.since, self.again_at = now, None
        self.restarts += 1


@dataclass
class Services:
    """The table-service instances, the relay, the timer service and the cashier, as
    child processes.

    ``name`` prefixes the processes' names (and the instance ids); ``schema_prefix``
    and ``lease_bucket`` give them stores and leases of their own (tests, benchmarks;
    the cashier then keeps its books in schema ``<schema_prefix>cashier`` and follows
    the public stream with a consumer of that name).  ``authority`` issues each
    service its credentials (the identity ``service.<table|relay|timer|cashier>``);
    None: ``env`` says how they connect.  ``replicas``: of the streams and buckets the
    services create (a 3-node cluster: 3).  ``pause_ms``: the table services' pause
    between hands (ended by the timer service)."""

    env: dict[str, str]
    log_dir: Path
    _: KW_ONLY
    instances: int
    stores: int
    timers: bool = False
    cashier: bool = True
    lobby: bool = True
    history: bool = True
    ledger: bool = True
    name: str = "room"
    schema_prefix: str | None = None
    lease_bucket: str | None = None
    authority: Authority | None = None
    replicas: int = 1
    pause_ms: int = 0
    console_port: int | None = None          # the web console on 127.0.0.1:<port>; None: no console
    procs: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = field(default_factory=list,
                                                                       init=False)
    lives: dict[str, Life] = field(default_factory=dict, init=False)

    def commands(self) -> list[tuple[str, list[str]]]:
        """Each process's name and command line, in the order they start."""
        replicas = ["--replicas", str(self.replicas)] if self.replicas != 1 else []
        table_args = ["--stores", str(self.stores), *replicas]
        if self.pause_ms:
            table_args += ["--pause-ms", str(self.pause_ms)]
        relay_args = ["--stores", str(self.stores), "--log-level", "WARNING"]
        if self.schema_prefix:
            table_args += ["--schema-prefix", self.schema_prefix]
            for schema in store_schemas(self.stores, self.schema_prefix):
                relay_args += ["--schema", schema]
        if self.lease_bucket:
            table_args += ["--lease-bucket", self.lease_bucket]
        commands = [(f"{self.name}-table-{i}",
                     [*SERVE, "table", "--instance-id", f"{self.name}-{i}", *table_args])
                    for i in range(1, self.instances + 1)]
        commands.append((f"{self.name}-relay", [*SERVE, "relay", *relay_args, *replicas]))
        if self.timers:
            commands.append((f"{self.name}-timer", [*SERVE, "timer", "--instance-id",
                                                    f"{self.name}-timer", "--log-level",
                                                    "WARNING", *replicas]))
        if self.cashier:
            commands.append((f"{self.name}-cashier", [*SERVE, "cashier", *self._cashier_args()]))
        if self.lobby:
            commands.append((f"{self.name}-lobby", [*SERVE, "lobby", "--instance-id", f"{self.name}-lobby",
                                                    "--log-level", "WARNING", *replicas]))
        if self.history:
            own = ["--store-prefix", self.schema_prefix, "--schema", f"{self.schema_prefix}history"] \
                if self.schema_prefix else []
            commands.append((f"{self.name}-history", [*SERVE, "history", "--log-level", "WARNING", *own]))
        if self.ledger:
            own = ["--cashier-schema", f"{self.schema_prefix}cashier",
                   "--ledger-schema", f"{self.schema_prefix}ledger"] if self.schema_prefix else []
            commands.append((f"{self.name}-ledger", [*SERVE, "ledger", *relay_args, *own]))
        if self.console_port is not None:
            commands.append((f"{self.name}-console", [*SERVE, CONSOLE, "--port", str(self.console_port),
                                                      "--log-level", "WARNING"]))
        return commands

    def _cashier_args(self) -> list[str]:
        args = ["--instance-id", f"{self.name}-cashier", "--log-level", "WARNING"]
        if self.schema_prefix:
            args += ["--schema", f"{self.schema_prefix}cashier", "--consumer", f"{self.schema_prefix}cashier"]
        return args

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for name, command in self.commands():
            self.procs.append(self._spawn(name, command))
            self.lives[name] = Life(command, time.monotonic())

    def _spawn(self, name: str, command: list[str]) -> tuple[str, subprocess.Popen[bytes], IO[bytes]]:
        log_file = (self.log_dir / f"{name}.log").open("ab")
        log_file.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command)}\n".encode())
        log_file.flush()
        proc = subprocess.Popen(
            command, env=self.env_of(command), stdin=subprocess.DEVNULL, stdout=log_file,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        return name, proc, log_file

    def supervise(self, now: float | None = None) -> list[str]:
        """Start again each child that died, after its back-off (:class:`Life`);
        the names of those started now.  Called every fraction of a second."""
        now = time.monotonic() if now is None else now
        started = []
        for i, (name, proc, log_file) in enumerate(self.procs):
            life = self.lives[name]
            if proc.poll() is None or not life.due(now, proc.returncode, log_file):
                continue
            log_file.close()
            self.procs[i] = self._spawn(name, life.command)
            life.started(now)
            started.append(name)
        return started

    def restarts(self) -> dict[str, int]:
        """How many times each child that was started again was, by name."""
        return {name: life.restarts for name, life in self.lives.items() if life.restarts}

    def identities(self) -> set[tuple[str, str]]:
        """The children's NATS identities: ``("service", "table" | "relay" | "timer" | "cashier")``."""
        own = {("service", _service(command)) for _, command in self.commands() if _service(command) != CONSOLE}
        # the console's desk reads the dead letters as the read-only "projections" identity
        return own | ({("service", "projections")} if self.console_port is not None else set())

    def env_of(self, command: list[str]) -> dict[str, str]:
        """The environment of one child: ``env``, and its own service credentials."""
        if self.authority is None or _service(command) == CONSOLE:
            return self.env
        creds = self.authority.ensure("service", _service(command))
        return {**self.env, NATS_CREDS_VAR: str(creds)}

    def dead(self) -> list[str]:
        """The children dead now (waiting for their restart, if supervised)."""
        return [f"{name} (exit {proc.returncode})" for name, proc, _ in self.procs
                if proc.poll() is not None]

    def stop(self, timeout: float = 20.0) -> list[str]:
        """SIGTERM all, wait, SIGKILL what is left. Returns problems (non-zero exits)."""
        problems: list[str] = []
        for _, proc, _ in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, proc, log_file in self.procs:
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                problems.append(f"{name} did not stop on SIGTERM: killed")
                proc.kill()
                proc.wait()
            if proc.returncode not in (0, -signal.SIGTERM):
                problems.append(f"{name} exited with {proc.returncode} (log {self.log_dir / name}.log)")
            log_file.close()
        self.procs.clear()
        return problems
