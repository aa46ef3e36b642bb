"""CPU time of the room's processes, read from Linux ``/proc``, and what ``bench room``
makes of it: CPU per action of each part and of the server side (docs/design/benchmarks.md).

A process's CPU is its own (user + system) plus what its children used before they
exited and were reaped (``cutime`` + ``cstime``), plus the same of each child alive now:
so PostgreSQL is the postmaster with every backend, those that came and went too.  Here
(not under ``tools/bench``) so that its tests may import it: no test imports a benchmark.
"""

from __future__ import annotations

import contextlib
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
BOTS = "bots"                 # the benchmark's own process: the players, not the server side
PARTS = ("table", "relay", "timer", "cashier", "lobby", "history", "ledger", "nats-server", "postgres")

Sample = dict[str, float]     # part -> CPU seconds used since it started


@dataclass(frozen=True)
class Times:
    """One process's line of ``/proc/<pid>/stat``: its parent, and CPU seconds."""

    ppid: int
    own: float                # user + system
    reaped: float             # its children's that exited and were waited for


def parse_stat(text: str) -> Times:
    """``/proc/<pid>/stat``: the fields after the command name (which may hold spaces
    and parentheses) are state, ppid, ... utime(14) stime(15) cutime(16) cstime(17)."""
    fields = text.rsplit(")", 1)[1].split()
    ticks = [int(f) for f in fields[11:15]]
    return Times(int(fields[1]), (ticks[0] + ticks[1]) / TICK, (ticks[2] + ticks[3]) / TICK)


def read_processes(proc: Path = Path("/proc")) -> dict[int, Times]:
    """Every process's times now (those that end while being read are left out)."""
    found = {}
    with contextlib.suppress(OSError):
        for entry in proc.iterdir():
            if entry.name.isdecimal():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    found[int(entry.name)] = parse_stat((entry / "stat").read_text())
    return found


def tree(pid: int, processes: Mapping[int, Times]) -> list[int]:
    """``pid`` and every process below it, living now (none: ``pid`` is not there)."""
    children: dict[int, list[int]] = defaultdict(list)
    for child, times in processes.items():
        children[times.ppid].append(child)
    found: list[int] = []
    todo, seen = [pid], set()
    while todo:
        current = todo.pop()
        if current in seen or current not in processes:
            continue
        seen.add(current)
        found.append(current)
        todo += children.get(current, [])
    return found


def tree_seconds(pid: int, processes: Mapping[int, Times]) -> float:
    """CPU seconds of ``pid`` and every descendant, living or reaped (0: not there)."""
    return sum(processes[p].own + processes[p].reaped for p in tree(pid, processes))


def sample(parts: Iterable[tuple[str, int]], own_process: float,
           processes: Mapping[int, Times] | None = None) -> Sample:
    """CPU seconds by part: ``parts`` names a part and a process (a part of several
    processes, two table services, is their sum); ``own_process`` is the bots'."""
    processes = read_processes() if processes is None else processes
    out: Sample = defaultdict(float)
    for part, pid in parts:
        out[part] += tree_seconds(pid, processes)
    out[BOTS] = own_process
    return dict(out)


def used(before: Mapping[str, float], after: Mapping[str, float]) -> Sample:
    """CPU seconds each part used between two samples (a part missing before: from 0;
    never below 0, as a process started again counts from 0)."""
    return {part: max(after[part] - before.get(part, 0.0), 0.0) for part in after}


def server_side(cpu: Mapping[str, float]) -> float:
    """Everything but the bots."""
    return sum(v for part, v in cpu.items() if part != BOTS)


def ms_per_action(cpu: Mapping[str, float], actions: int) -> dict[str, float]:
    """CPU ms per action by part, and the server side's total (NaN: no action)."""
    per = {part: seconds * 1000 / actions if actions else float("nan") for part, seconds in cpu.items()}
    per["server side"] = server_side(cpu) * 1000 / actions if actions else float("nan")
    return per


def cpu_bound(cpu: Mapping[str, float], actions: int, cores: int) -> float:
    """The actions a second ``cores`` allow at the CPU per action of ``cpu`` (every
    part: the server side and the bots share the machine): the most a row could play,
    however its commits go (NaN: nothing measured)."""
    used_s = sum(cpu.values())
    return cores * actions / used_s if actions and used_s > 0 else float("nan")


def share_of_a_core(cpu: Mapping[str, float], seconds: float) -> dict[str, float]:
    """Each part's CPU as a fraction of one core over ``seconds`` (the idle row), and
    the server side's."""
    per = {part: v / seconds if seconds else float("nan") for part, v in cpu.items()}
    per["server side"] = server_side(cpu) / seconds if seconds else float("nan")
    return per


def less_idle_ms(cpu: Mapping[str, float], actions: int, seconds: float,
                 idle_cpu: Mapping[str, float], idle_seconds: float) -> float:
    """The server side's CPU ms per action beyond what the same room costs idle over
    as many seconds (NaN: no action or no idle measurement)."""
    if not actions or not idle_seconds:
        return float("nan")
    return (server_side(cpu) - server_side(idle_cpu) / idle_seconds * seconds) * 1000 / actions


def machine_busy(stat: Path = Path("/proc/stat")) -> float:
    """CPU seconds the whole machine was busy (every CPU, every process), since boot:
    the first line of ``/proc/stat`` less idle and iowait."""
    try:
        fields = [int(f) for f in stat.read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICK        # user..steal, less idle, iowait
