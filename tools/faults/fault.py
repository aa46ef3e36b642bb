"""The faults the drill injects, in order: ``kill -9`` of the first child of each service
the room runs, then PostgreSQL and NATS each stopped cleanly and killed, then started
again on the same port (docs/design/resilience.md)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from studroom.services.runtime.processes.supervisor import SERVE, Services
from studroom.services.runtime.servers.server_process import ServerProcess

BASELINE = "baseline"
KILL = "kill"
SERVER = "server"
STOP, CRASH = "stop", "kill -9"           # how a server goes down: a clean stop, or SIGKILL


@dataclass(frozen=True)
class Fault:
    name: str          # as the report prints it
    kind: str          # BASELINE, KILL or SERVER
    target: str = ""   # the child process killed, or "postgres" / "nats"
    service: str = ""  # what the killed child serves (table, relay, ...)
    how: str = ""      # how a server goes down: STOP or CRASH


def faults_of(services: Services) -> list[Fault]:
    """The faults, in the order the drill injects them: a kill of the first child of
    each service the room runs, then PostgreSQL, then NATS."""
    out, seen = [], set()
    for name, command in services.commands():
        service = command[len(SERVE)]
        if service not in seen:
            seen.add(service)
            out.append(Fault(f"kill -9 {service}", KILL, name, service))
    for server in ("postgres", "nats"):
        out.append(Fault(f"{server} stop/start", SERVER, server, how=STOP))
        out.append(Fault(f"{server} kill -9/start", SERVER, server, how=CRASH))
    return out


def pid_of(services: Services, name: str) -> int | None:
    """The pid of the running child ``name`` (None: not running)."""
    for child, proc, _ in services.procs:
        if child == name and proc.poll() is None:
            return proc.pid
    return None


def stop_start(server: ServerProcess, how: str, outage: float) -> str | None:
    """Stop (or kill) the server, leave it down for ``outage`` seconds, start it again:
    a problem when it comes back elsewhere (its clients know one address)."""
    port = server.port
    if how == CRASH:
        server.kill()
    else:
        server.stop()
    time.sleep(outage)
    server.start()
    if server.port != port:
        return f"{server.name} came back on port {server.port}, not {port}"
    return None
