"""What one timer-service instance did: its counters, and how late its last timers
fired and were done (logged every ``--stats-every`` seconds, exposed by metrics.py)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class TimerStats:
    turns_seen: int = 0          # TurnStarted / PauseStarted events read
    scheduled: int = 0           # schedules published (and set in the local wheel)
    superseded: int = 0          # a turn older than the pending schedule, or before its message's last: skipped
    settled: int = 0             # turns over while held, their schedule never written (settling.py)
    schedule_reads: int = 0      # schedule subjects read before a publish (nothing known, a wrong guess)
    notices: int = 0             # turn notices sent to the other instances
    fired: int = 0               # fired schedules (the backstop) received
    local_fired: int = 0         # local wheel timers sent at their deadline
    local_dropped: int = 0       # ... dropped before: another instance set a newer turn
    local_failed: int = 0        # ... without a final answer: left to the backstop
    backstop_skipped: int = 0    # fired schedules this instance's wheel had answered already
    timed_out: int = 0           # Timeout accepted by the table
    stale: int = 0               # stale_timeout: the player acted in time (R20)
    duplicate: int = 0           # duplicate_command: another instance's id was higher (retried)
    retried: int = 0             # nak'ed for redelivery (no reply, conflict, ...)
    errors: dict[str, int] = field(default_factory=dict)
    # lateness, ms: the fire (server's stamp of a schedule, or the wheel's) - deadline;
    # the table's reply received - deadline (a final answer, from either path)
    fire_lateness_ms: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))
    done_lateness_ms: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))

    def error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1

    def line(self) -> str:
        errors = ", ".join(f"{k}={v}" for k, v in sorted(self.errors.items())) or "none"
        return (f"turns={self.turns_seen} scheduled={self.scheduled} superseded={self.superseded} settled={self.settled} "
                f"reads={self.schedule_reads} notices={self.notices} "
                f"local: fired={self.local_fired} dropped={self.local_dropped} failed={self.local_failed} "
                f"backstop: fired={self.fired} skipped={self.backstop_skipped} "
                f"timed_out={self.timed_out} stale={self.stale} "
                f"duplicate={self.duplicate} retried={self.retried} errors: {errors}")
