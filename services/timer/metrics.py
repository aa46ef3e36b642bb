"""The timer service's metrics: its counters, and how late timers fire (the server's
fire stamp past the deadline) and are done (the table's reply past the deadline)."""

from __future__ import annotations

from collections.abc import Sequence

from ..runtime.observability.metrics import Collect, Metric, by_label, counter
from ..runtime.observability.stats import percentile
from .stats import TimerStats

QUANTILES = (50, 99, 100)


def timer_metrics(stats: TimerStats) -> Collect:
    def collect() -> list[Metric]:
        return [
            counter("timer_turns_seen", "TurnStarted events read", stats.turns_seen),
            counter("timer_scheduled", "timers scheduled", stats.scheduled),
            counter("timer_settled", "turns over before their schedule was written", stats.settled),
            counter("timer_schedule_reads", "schedule subjects read before a publish", stats.schedule_reads),
            counter("timer_notices", "turn notices sent to the other instances", stats.notices),
            counter("timer_fired", "timers fired", stats.fired),
            counter("timer_timed_out", "timeouts the table accepted", stats.timed_out),
            counter("timer_stale", "timers the player beat (R20)", stats.stale),
            counter("timer_retried", "fired timers given back for redelivery", stats.retried),
            by_label("counter", "timer_errors", "timeouts refused, by error code", "code", stats.errors),
            _lateness(stats.fire_lateness_ms, stats.done_lateness_ms),
        ]

    return collect


def _lateness(fire: Sequence[float], done: Sequence[float]) -> Metric:
    """Quantiles (1 = the latest) of the last timers' lateness, in seconds."""
    samples = [("", {"kind": kind, "quantile": f"{q / 100:g}"}, percentile(values, q) / 1000)
               for kind, values in (("fire", fire), ("done", done)) if values for q in QUANTILES]
    return Metric("timer_lateness_seconds", "gauge", "lateness of the last timers past their deadline", samples)
