"""``bench room``'s rows and the tables it prints: play (actions/s, latency, beside the
bare commits and NATS round trips of the same run), CPU ms per action of each process
and of the server side, and the idle CPU (tables open, nobody playing)."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO

from studroom.services.runtime.text import rate, table
from studroom.tools.room_cpu import BOTS, PARTS, cpu_bound, less_idle_ms, ms_per_action, share_of_a_core

GOAL_CPU_MS = 1.0            # issue 20: server CPU per action at 16 tables
GOAL_P99_MS = 20.0
GOAL_SCALE = 0.15            # issue 20: 2 instances and 2 stores within 15 % of 1 and 1, CPU per action


@dataclass(frozen=True)
class Layout:
    instances: int
    stores: int
    servers: int = 1             # PostgreSQL servers the stores are spread over (store j on server j % servers)

    @classmethod
    def parse(cls, text: str) -> Layout:
        """``2x2``: instances x stores; ``2x2x2``: and PostgreSQL servers (default 1)."""
        numbers = [int(part) for part in text.lower().split("x")]
        if len(numbers) not in (2, 3):
            raise ValueError(text)
        return cls(*numbers)

    def __str__(self) -> str:
        return f"{self.instances}x{self.stores}" + (f"x{self.servers}" if self.servers != 1 else "")


@dataclass
class Row:
    tables: int
    layout: Layout
    auth: bool
    seconds: float = 0.0
    actions: int = 0
    hands: int = 0
    events: int = 0
    messages: int = 0              # public relay messages (one per commit since issue 20's third round)
    commands: int = 0              # commands through the table services' group commits ...
    commits: int = 0               # ... and their batches (their counters; each batch one append)
    nats_in: int = 0               # messages into and out of the NATS server (its /varz), every client's
    nats_out: int = 0
    errors: int = 0
    p50: float = math.nan          # seconds
    p99: float = math.nan
    cpu: dict[str, float] = dataclasses.field(default_factory=dict)    # CPU seconds by part, while playing
    machine: float = 0.0           # the whole machine's busy CPU seconds meanwhile (every process)
    idle_seconds: float = 0.0
    idle_cpu: dict[str, float] = dataclasses.field(default_factory=dict)
    problems: list[str] = dataclasses.field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.tables} tables {self.layout}, auth {'on' if self.auth else 'off'}"

    @property
    def actions_per_s(self) -> float:
        return self.actions / self.seconds if self.seconds else 0.0

    @property
    def server_ms(self) -> float:
        return ms_per_action(self.cpu, self.actions)["server side"]

    @property
    def server_ms_less_idle(self) -> float:
        """The server side's CPU per action beyond what the same room costs idle (NaN: no idle row)."""
        return less_idle_ms(self.cpu, self.actions, self.seconds, self.idle_cpu, self.idle_seconds)


def _f2(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.2f}"


def _pct(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.0%}"


def _parts(cpus: Sequence[dict[str, float]]) -> list[str]:
    seen = {p for cpu in cpus for p in cpu}
    return [p for p in PARTS if p in seen] + sorted(seen - {*PARTS, BOTS})


def report(rows: list[Row], commit_rate: float, nats_rate: float, out: IO[str]) -> None:
    def say(text: str) -> None:
        out.write(text + "\n")

    cores = os.cpu_count() or 1
    say("")
    say(f"baseline: bare INSERT commits (psycopg, 1 connection) {rate(commit_rate)}")
    say(f"          bare NATS request/reply round trips          {rate(nats_rate)}")
    say("")
    say("play (instances x stores; latency request -> reply in the bots):")
    header = ["row", "actions/s", "p50 ms", "p99 ms", "events/action", "public msgs/action", "commands/commit",
              "NATS msgs in/out per action", "errors", "÷ commits", "÷ NATS"]
    say(table(header, [[r.label, round(r.actions_per_s), r.p50 * 1000, r.p99 * 1000,
                        _f2(r.events / r.actions if r.actions else math.nan),
                        _f2(r.messages / r.actions if r.actions else math.nan),
                        _f2(r.commands / r.commits if r.commits else math.nan),
                        f"{r.nats_in / r.actions:.1f} / {r.nats_out / r.actions:.1f}" if r.actions else "", r.errors,
                        _f2(r.actions_per_s / commit_rate), f"{r.actions_per_s / nats_rate:.3f}"]
                       for r in rows], right=("events/action", "public msgs/action", "commands/commit",
                                              "NATS msgs in/out per action", "÷ commits", "÷ NATS")))
    played = [r for r in rows if r.actions]
    if played:
        parts = _parts([r.cpu for r in played])
        say("")
        say(f"CPU ms per action, by process (/proc; table = all its instances; postgres = the postmaster "
            f"and every backend); 'ours' and 'machine' are shares of all {cores} cores, 'machine' "
            f"counts every process on it (the machine is shared); 'less idle': the server side less what "
            f"the idle row costs in as many seconds:")
        body = []
        for r in played:
            per = ms_per_action(r.cpu, r.actions)
            ours = sum(r.cpu.values()) / (r.seconds * cores) if r.seconds else math.nan
            busy = r.machine / (r.seconds * cores) if r.seconds else math.nan
            body.append([r.label, *(_f2(per.get(p, math.nan)) for p in parts), _f2(per["server side"]),
                         _f2(r.server_ms_less_idle), _f2(per.get(BOTS, math.nan)), _pct(ours), _pct(busy)])
        columns = [*parts, "server side", "less idle", BOTS, "ours", "machine"]
        say(table(["row", *columns], body, right=columns))
    idle = [r for r in rows if r.idle_seconds]
    if idle:
        parts = _parts([r.idle_cpu for r in idle])
        say("")
        say("idle: tables open, nobody seated; CPU as a share of one core, by process:")
        body = []
        for r in idle:
            share = share_of_a_core(r.idle_cpu, r.idle_seconds)
            body.append([r.label, *(_pct3(share.get(p, math.nan)) for p in parts), _pct3(share["server side"])])
        columns = [*parts, "server side"]
        say(table(["row", *columns], body, right=columns))
    for r in rows:
        for problem in r.problems:
            say(f"{r.label}: problem: {problem}")
    _report_cost_of_authorization(rows, say)
    _goals(rows, commit_rate, cores, say)
    out.flush()


def _pct3(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.1%}"


def _goals(rows: list[Row], commit_rate: float, cores: int, say: Callable[[str], None]) -> None:
    """Issue 20's goals, read on the rows with authorization on (the room runs so); where
    the rate is not met, what bounds it (:func:`rate_bound`)."""
    room = [r for r in rows if r.auth and r.actions and r.tables >= 16] or [r for r in rows if r.actions]
    if not room:
        return
    say("")
    for r in room:
        cpu_ok = r.server_ms <= GOAL_CPU_MS
        rate_ok = r.actions_per_s >= commit_rate
        p99_ok = r.p99 * 1000 <= GOAL_P99_MS
        say(f"goals, {r.label}: server CPU {_f2(r.server_ms)} ms/action (<= {GOAL_CPU_MS:g}: "
            f"{'met' if cpu_ok else 'NOT met'}); actions/s {rate(r.actions_per_s)} >= bare commits "
            f"{rate(commit_rate)}: {'met' if rate_ok else 'NOT met'}; p99 {r.p99 * 1000:.1f} ms "
            f"(<= {GOAL_P99_MS:g}: {'met' if p99_ok else 'NOT met'})")
        if not rate_ok:
            say(f"  {rate_bound(r, commit_rate, cores)}")
    for wide, one in scale_pairs(rows):
        change = wide.server_ms / one.server_ms - 1
        say(f"goals, {wide.tables} tables {wide.layout} beside 1x1, auth {'on' if wide.auth else 'off'}: server CPU "
            f"{_f2(wide.server_ms)} vs {_f2(one.server_ms)} ms/action, {change:+.0%} (within {GOAL_SCALE:.0%}: "
            f"{'met' if change <= GOAL_SCALE else 'NOT met'})")


def rate_bound(row: Row, commit_rate: float, cores: int) -> str:
    """Why a row played fewer actions than bare commits: its CPU per action (server side
    and bots, sharing the machine's cores) caps it below the commit rate, or not."""
    bound = cpu_bound(row.cpu, row.actions, cores)
    used_ms = sum(row.cpu.values()) * 1000 / row.actions
    needed = cores * 1000 / commit_rate
    limit = "CPU-bound" if bound < commit_rate else "not CPU-bound"
    return (f"{limit}: {cores} cores at {_f2(used_ms)} ms of CPU an action (server side and bots) allow "
            f"{rate(bound)}, {row.actions_per_s / bound:.0%} of it played; bare commits on these cores need "
            f"<= {_f2(needed)} ms an action")


def scale_pairs(rows: list[Row]) -> list[tuple[Row, Row]]:
    """Each played row of 2 instances and 2 stores (on any number of servers) beside the
    1x1 row of as many tables and the same authorization, when both were played."""
    ones = {(r.tables, r.auth): r for r in rows if r.layout == Layout(1, 1) and r.actions and r.server_ms > 0}
    return [(r, ones[r.tables, r.auth]) for r in rows
            if (r.layout.instances, r.layout.stores) == (2, 2) and r.actions and (r.tables, r.auth) in ones]


def _report_cost_of_authorization(rows: list[Row], say: Callable[[str], None]) -> None:
    """Each row with authorization on beside the same without it."""
    off = {(r.tables, r.layout): r for r in rows if not r.auth}
    pairs = [(r, off[r.tables, r.layout]) for r in rows if r.auth and (r.tables, r.layout) in off]
    if not pairs:
        return
    say("")
    say("the cost of authorization (operator mode, per-user permissions, senders checked):")
    compared = []
    for on, bare in pairs:
        change = on.actions_per_s / bare.actions_per_s - 1 if bare.actions_per_s else math.nan
        compared.append([f"{on.tables} tables {on.layout}", round(on.actions_per_s), round(bare.actions_per_s),
                         f"{change:+.0%}", _f2(on.server_ms), _f2(bare.server_ms), on.p99 * 1000, bare.p99 * 1000])
    say(table(["row", "actions/s on", "off", "change", "CPU ms/action on", "off", "p99 ms on", "off"],
              compared, right=("change", "CPU ms/action on", "off")))

