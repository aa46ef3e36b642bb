"""CPU seconds used by each process of a room under ``bench room``: each service the
room runs (by its kind: ``table`` sums the instances), nats-server, PostgreSQL (the
postmaster and all its backends) and the bots (this process), from ``/proc``
(:mod:`studroom.tools.room_cpu`), beside how busy the whole machine was."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from studroom.services.runtime.processes.supervisor import SERVE
from studroom.tools import room_cpu

if TYPE_CHECKING:
    from studroom.services.runtime.processes.supervisor import Services

MACHINE = "machine"          # in a sample: the whole machine's busy seconds (not a part)


def pid_from(path: Path) -> int | None:
    """The process id on the first line of a pid file (None: no such file yet)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class CpuMeter:
    """Samples of the CPU seconds of each part of one room."""

    def __init__(self, services: Services, nats_pid: int | None, *postgres_pids: int | None) -> None:
        self.services = services
        self.nats_pid = nats_pid
        self.postgres_pids = postgres_pids      # each server's postmaster: "postgres" is their sum

    def parts(self) -> list[tuple[str, int]]:
        found = [(self.services.lives[name].command[len(SERVE)], proc.pid)
                 for name, proc, _ in self.services.procs]
        if self.nats_pid:
            found.append(("nats-server", self.nats_pid))
        found += [("postgres", pid) for pid in self.postgres_pids if pid]
        return found

    def sample(self) -> dict[str, float]:
        """CPU seconds by part, and the machine's busy seconds under :data:`MACHINE`."""
        out = room_cpu.sample(self.parts(), time.process_time())
        out[MACHINE] = room_cpu.machine_busy()
        return out


def split(before: dict[str, float], after: dict[str, float]) -> tuple[dict[str, float], float]:
    """The parts' CPU seconds between two samples, and the machine's busy seconds."""
    machine = after.pop(MACHINE, 0.0) - before.pop(MACHINE, 0.0)
    return room_cpu.used(before, after), machine
