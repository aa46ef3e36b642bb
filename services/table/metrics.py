"""The table service's metrics: commands answered, errors by code, command latency
(a request's arrival to its reply's publication), and the workers' counters."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import TYPE_CHECKING

import msgspec

from ..runtime.observability.metrics import (
    Collect,
    Histogram,
    Metric,
    by_label,
    counter,
    gauge,
)

if TYPE_CHECKING:
    from .service import TableService

MAX_WAITING = 50_000            # requests remembered while their reply is pending (the oldest go)


class _Error(msgspec.Struct):
    code: str


class _Outcome(msgspec.Struct):
    ok: bool
    error: _Error | None = None


_outcome = msgspec.json.Decoder(_Outcome)
_OK = b'{"ok":true'             # how an accepted reply begins (``ok`` is Reply's first field): not decoded


class CommandMeter:
    """Times each request by its reply subject (unique per request) and counts the
    replies' error codes."""

    def __init__(self) -> None:
        self.latency = Histogram()
        self.answered = 0
        self.errors: dict[str, int] = {}
        self._waiting: OrderedDict[str, int] = OrderedDict()

    def received(self, reply_to: str | None) -> None:
        if reply_to:
            self._waiting[reply_to] = time.perf_counter_ns()
            if len(self._waiting) > MAX_WAITING:
                self._waiting.popitem(last=False)

    def replied(self, subject: str, data: bytes) -> None:
        started = self._waiting.pop(subject, None)
        if started is None:
            return
        self.answered += 1
        self.latency.observe((time.perf_counter_ns() - started) / 1e9)
        if data.startswith(_OK):
            return
        try:
            outcome = _outcome.decode(data)
        except msgspec.DecodeError:
            return
        if not outcome.ok:
            code = outcome.error.code if outcome.error else "unknown"
            self.errors[code] = self.errors.get(code, 0) + 1


def table_metrics(service: TableService) -> Collect:
    def collect() -> list[Metric]:
        meter = service.meter
        workers = [w.stats for w in service.workers]
        handlers = [w.handler.stats for w in service.workers]
        return [
            counter("commands", "commands answered by this instance", meter.answered),
            by_label("counter", "command_errors", "commands refused, by error code", "code", meter.errors),
            meter.latency.metric("command_seconds", "a command's arrival to its reply"),
            counter("table_batches", "group commits", sum(w.batches for w in workers)),
            counter("table_events", "events stored", sum(h.events for h in handlers)),
            counter("table_hands_started", "hands started", sum(h.hands_started for h in handlers)),
            counter("table_conflicts", "appends that found the table moved on", sum(h.conflicts for h in handlers)),
            counter("table_internal_errors", "commands that failed inside the service",
                    sum(h.internal_errors for h in handlers)),
            gauge("table_partitions", "partitions this instance serves", len(service.owned())),
        ]

    return collect
