"""What the drill found: each fault's outcome (recovery time, problems, notes) and the
table of them the test and ``studroom bench faults`` print."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .fault import Fault


@dataclass
class Outcome:
    fault: Fault
    recovery: float | None = None      # seconds from the fault's end until all was back
    dealing: float | None = None       # ... until every table dealt a new hand
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    round: int = 1

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class DrillReport:
    outcomes: list[Outcome]
    events: int = 0                    # stored, on the drill's tables
    published: int = 0                 # on the public stream
    duplicates: int = 0
    hands: int = 0

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]


def line(outcome: Outcome) -> str:
    """One fault's outcome as the drill says it while it runs."""
    took = "-" if outcome.recovery is None else f"{outcome.recovery:.1f} s"
    return f"recovery {took}: " + ("ok" if outcome.ok else "FAILED: " + "; ".join(outcome.problems))


def _rounds_table(outcomes: list[Outcome], width: int) -> list[str]:
    """Each fault over the rounds: the median and the longest recovery, failures."""
    lines = [f"{'over the rounds':<{width}}  {'median s':>10}  {'max s':>11}  failed",
             "-" * (width + 36)]
    by_name: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.round:
            by_name.setdefault(o.fault.name, []).append(o)
    for name, runs in by_name.items():
        took = [o.recovery for o in runs if o.recovery is not None]
        median = f"{statistics.median(took):.2f}" if took else "-"
        longest = f"{max(took):.2f}" if took else "-"
        lines.append(f"{name:<{width}}  {median:>10}  {longest:>11}  {sum(not o.ok for o in runs)} of {len(runs)}")
    return lines


def report_table(report: DrillReport) -> str:
    """The recovery time of each fault, beside the baseline (for the README)."""
    rounds = any(o.round > 1 for o in report.outcomes)

    def name(o: Outcome) -> str:
        return o.fault.name + (f" #{o.round}" if rounds and o.round else "")

    width = max(len(name(o)) for o in report.outcomes)
    lines = [f"{'fault':<{width}}  {'recovery s':>10}  {'new hands s':>11}  result",
             "-" * (width + 36)]
    for o in report.outcomes:
        recovery = "-" if o.recovery is None else f"{o.recovery:.2f}"
        dealing = "-" if o.dealing is None else f"{o.dealing:.2f}"
        lines.append(f"{name(o):<{width}}  {recovery:>10}  {dealing:>11}  "
                     + ("ok" if o.ok else "FAILED"))
        lines += [f"    problem: {p}" for p in o.problems[:8]]
        lines += [f"    note: {n}" for n in o.notes]
    if rounds:
        lines += ["", *_rounds_table(report.outcomes, width)]
    lines.append("")
    lines.append(f"events stored {report.events}, on the public stream {report.published}, "
                 f"lost {max(report.events - report.published, 0)}, duplicated {report.duplicates}; "
                 f"{report.hands} hands")
    return "\n".join(lines)
