"""CPU seconds used by each part of a room (table services, relay, bots, NATS,
PostgreSQL), read from Linux ``/proc``: the room benchmark's CPU per action."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from studroom.services.runtime.processes.supervisor import Services

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _children(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if entry.name.isdecimal():
                with contextlib.suppress(OSError, IndexError):
                    if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry.name))
    return found


def _pid_from(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class CpuMeter:
    """CPU seconds used by each part of the room: table services, relay, the bots
    (this process), and the embedded NATS (in ``nats_home``) and PostgreSQL (in the
    data folder; server + backends)."""

    def __init__(self, services: Services, data_dir: Path | None, nats_home: Path | None) -> None:
        self.services = services
        self.nats_pid = _pid_from(nats_home / "nats.pid") if nats_home else None
        self.pg_pid = _pid_from(data_dir / "postgres" / "pgdata" / "postmaster.pid") if data_dir else None

    def sample(self) -> dict[str, float]:
        out = {"table service": 0.0, "relay": 0.0}
        for name, proc, _ in self.services.procs:
            out["relay" if name.endswith("relay") else "table service"] += _proc_cpu(proc.pid)
        out["bots"] = time.process_time()
        if self.nats_pid:
            out["nats"] = _proc_cpu(self.nats_pid)
        if self.pg_pid:
            out["postgres"] = sum(_proc_cpu(p) for p in [self.pg_pid, *_children(self.pg_pid)])
        return out
