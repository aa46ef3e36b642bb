"""``bench room``'s CPU attribution and arithmetic (tools/room_cpu.py), without servers:
a process's CPU is its own, its reaped children's and its living descendants'; the
server side is everything but the bots; a part started again never counts below 0."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import pytest
from studroom.tools import room_cpu
from studroom.tools.room_cpu import BOTS, TICK, Times

BURN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass\n{after}"


def _stat(pid: int, ppid: int, utime: int, stime: int, cutime: int = 0, cstime: int = 0,
          name: str = "postgres: a (b) c") -> str:
    rest = [str(ppid), "1", "1", "0", "-1", "4194304", "0", "0", "0", "0", str(utime), str(stime), str(cutime),
            str(cstime), "20", "0", "1", "0", "100"]
    return f"{pid} ({name}) S {' '.join(rest)}\n"


def test_a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() -> None:
    times = room_cpu.parse_stat(_stat(42, 7, utime=3 * TICK, stime=TICK, cutime=2 * TICK, cstime=TICK))
    assert times == Times(ppid=7, own=4.0, reaped=3.0)


def test_a_tree_is_its_root_its_reaped_children_and_every_living_descendant() -> None:
    processes = {
        100: Times(ppid=1, own=1.0, reaped=5.0),     # postmaster; backends that ended: 5 s
        101: Times(ppid=100, own=2.0, reaped=0.0),   # a backend
        102: Times(ppid=100, own=0.5, reaped=0.25),  # autovacuum launcher, a worker reaped
        103: Times(ppid=102, own=0.125, reaped=0.0),  # a worker alive
        200: Times(ppid=1, own=9.0, reaped=9.0),     # someone else
    }
    assert room_cpu.tree_seconds(100, processes) == 1.0 + 5.0 + 2.0 + 0.5 + 0.25 + 0.125
    assert room_cpu.tree_seconds(999, processes) == 0.0          # gone: nothing


def test_a_sample_sums_the_processes_of_a_part_and_keeps_the_bots_apart() -> None:
    processes = {10: Times(1, 1.0, 0.0), 11: Times(1, 2.0, 0.0), 12: Times(1, 0.5, 0.0)}
    cpu = room_cpu.sample([("table", 10), ("table", 11), ("relay", 12)], own_process=3.0, processes=processes)
    assert cpu == {"table": 3.0, "relay": 0.5, BOTS: 3.0}
    assert room_cpu.server_side(cpu) == 3.5


def test_cpu_used_between_samples_is_never_negative_and_new_parts_count_from_zero() -> None:
    before = {"table": 5.0, "relay": 1.0, BOTS: 2.0}
    after = {"table": 0.5, "relay": 1.5, "timer": 0.25, BOTS: 2.5}     # the table service started again
    assert room_cpu.used(before, after) == {"table": 0.0, "relay": 0.5, "timer": 0.25, BOTS: 0.5}


def test_ms_per_action_and_the_server_side_total_leave_the_bots_out() -> None:
    per = room_cpu.ms_per_action({"table": 0.41, "nats-server": 0.78, BOTS: 2.0}, actions=1000)
    assert per["table"] == pytest.approx(0.41)
    assert per["server side"] == pytest.approx(1.19)
    assert per[BOTS] == pytest.approx(2.0)
    assert math.isnan(room_cpu.ms_per_action({"table": 1.0}, actions=0)["server side"])
    idle = room_cpu.share_of_a_core({"timer": 1.5, "lobby": 0.5, BOTS: 3.0}, seconds=10.0)
    assert idle["server side"] == pytest.approx(0.2)
    # 10 s of play, 1,000 actions, 3 s of server CPU; idle, the server side uses 0.1 core
    assert room_cpu.less_idle_ms({"table": 3.0, BOTS: 9.0}, 1000, 10.0, {"table": 1.5, BOTS: 1.0}, 15.0) \
        == pytest.approx(2.0)
    assert math.isnan(room_cpu.less_idle_ms({"table": 3.0}, 1000, 10.0, {}, 0.0))


def test_a_child_is_counted_while_it_lives_and_after_it_is_reaped() -> None:
    """On this machine's /proc: a child burning 0.3 s of CPU, then sleeping, is in our
    tree alive, and still after it exited and was waited for (our cutime)."""
    if not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc")
    me = os.getpid()
    before = room_cpu.tree_seconds(me, room_cpu.read_processes())
    child = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=0.3, after="time.sleep(30)")])
    try:
        deadline = time.monotonic() + 20
        while (own := room_cpu.tree_seconds(child.pid, room_cpu.read_processes())) < 0.3 - 2 / TICK:
            assert time.monotonic() < deadline, f"the child used {own} s"
            time.sleep(0.05)
        alive = room_cpu.tree_seconds(me, room_cpu.read_processes())
    finally:
        child.kill()
        child.wait()
    reaped = room_cpu.tree_seconds(me, room_cpu.read_processes())
    assert alive - before >= 0.3 - 2 / TICK
    assert reaped >= alive - 1 / TICK          # the dead child's CPU moved into ours, not lost


def test_the_machine_is_busy_a_positive_number_of_seconds() -> None:
    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc")
    assert room_cpu.machine_busy() > 0


def test_the_cpu_bound_is_the_cores_over_the_cpu_of_an_action_bots_included() -> None:
    """2 cores, 1,000 actions that cost 1.5 s of the server side and 0.5 s of the bots
    (2 ms an action): at most 1,000 actions a second, however the commits go."""
    cpu = {"table": 1.0, "postgres": 0.5, BOTS: 0.5}
    assert room_cpu.cpu_bound(cpu, 1000, cores=2) == pytest.approx(1000.0)
    assert room_cpu.cpu_bound(cpu, 1000, cores=4) == pytest.approx(2000.0)
    assert math.isnan(room_cpu.cpu_bound(cpu, 0, cores=2))
    assert math.isnan(room_cpu.cpu_bound({}, 1000, cores=2))
