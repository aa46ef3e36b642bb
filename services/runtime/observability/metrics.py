"""A process's metrics, read from its own counters when asked.

A service hands the :class:`Registry` collectors: functions that return
:class:`Metric` values made from the counters it keeps anyway (its stats objects), so
there is no second set of counters to keep in step.  Readings that need a query (a
projection's lag, the relay's backlog) are :class:`Poll` gauges, refreshed in the
background, never on the scraper's time.  :class:`Histogram` is the one stateful kind
(command latency).  The registry is a ``prometheus_client`` collector: the library
writes the exposition (:meth:`Registry.exposition`); the same readings feed
``$SRV.STATS`` and the stop line.  Names and labels: docs/design/observability.md.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.metrics_core import Metric as Family
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

log = logging.getLogger(__name__)

PREFIX = "studroom_"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

Labels = Mapping[str, str]
FAMILIES = {"counter": CounterMetricFamily, "gauge": GaugeMetricFamily, "histogram": HistogramMetricFamily}


@dataclass(frozen=True)
class Metric:
    """One family (``name`` without the prefix; ``kind``: counter, gauge, histogram)
    and its samples: (suffix, labels, value)."""

    name: str
    kind: str
    help: str
    samples: list[tuple[str, Labels, float]] = field(default_factory=list)


def counter(name: str, help_: str, value: float, **labels: str) -> Metric:
    return Metric(name, "counter", help_, [("_total", labels, value)])


def gauge(name: str, help_: str, value: float, **labels: str) -> Metric:
    return Metric(name, "gauge", help_, [("", labels, value)])


def by_label(kind: str, name: str, help_: str, label: str, values: Mapping[str, float]) -> Metric:
    """One sample for each key of ``values`` (e.g. errors by code)."""
    suffix = "_total" if kind == "counter" else ""
    return Metric(name, kind, help_, [(suffix, {label: key}, value) for key, value in sorted(values.items())])


class Histogram:
    """Observations in fixed buckets (seconds by default)."""

    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.count += 1
        self.sum += value

    def metric(self, name: str, help_: str, **labels: str) -> Metric:
        samples: list[tuple[str, Labels, float]] = []
        running = 0
        for bound, count in zip((*self.buckets, math.inf), self.counts, strict=True):
            running += count
            samples.append(("_bucket", {**labels, "le": floatToGoString(bound)}, running))
        samples += [("_sum", labels, self.sum), ("_count", labels, self.count)]
        return Metric(name, "histogram", help_, samples)


Collect = Callable[[], Iterable[Metric]]


class Poll:
    """Gauges that need a query: ``read()`` gives {label value: reading}, refreshed every
    ``every`` seconds by :meth:`run`; the last readings are what a scrape sees."""

    def __init__(self, name: str, help_: str, label: str, read: Callable[[], Awaitable[Mapping[str, float]]],
                 every: float = 2.0) -> None:
        self.name, self.help, self.label, self.read, self.every = name, help_, label, read, every
        self.values: dict[str, float] = {}

    async def refresh(self) -> None:
        try:
            self.values = dict(await self.read())
        except Exception as error:  # noqa: BLE001 (a server away: keep the last readings)
            log.debug("poll %s failed: %r", self.name, error)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.refresh()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.every)

    def metric(self) -> Metric:
        return by_label("gauge", self.name, self.help, self.label, self.values)


class Registry(Collector):
    """The collectors of one process; ``labels`` go on every sample (service, instance)."""

    def __init__(self, **labels: str) -> None:
        self.labels = labels
        self.collectors: list[Collect] = []
        self.polls: list[Poll] = []

    def add(self, collect: Collect) -> None:
        self.collectors.append(collect)

    def poll(self, poll: Poll) -> None:
        self.polls.append(poll)

    def metrics(self) -> list[Metric]:
        out: list[Metric] = []
        for collect in self.collectors:
            try:
                out += collect()
            except Exception:
                log.exception("a metrics collector failed")
        return out + [p.metric() for p in self.polls]

    def collect(self) -> Iterable[Family]:
        """Our metrics as ``prometheus_client`` families, one per name (several collectors
        may give samples of one family: the doors of every responder, say)."""
        families: dict[str, Family] = {}
        for metric in self.metrics():
            full = PREFIX + metric.name
            family = families.get(metric.name)
            if family is None:
                family = families[metric.name] = FAMILIES[metric.kind](full, metric.help)
            for suffix, labels, value in metric.samples:
                family.add_sample(full + suffix, {**self.labels, **labels}, value)
        return families.values()

    def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """Every metric in the format the scraper's ``Accept`` header asks for (Prometheus
        text 0.0.4 by default, OpenMetrics if asked), and its content type."""
        encode, content_type = choose_encoder(accept)
        return encode(self), content_type

    def readings(self) -> dict[str, float]:
        """Every sample but histogram buckets, as ``name{labels}: value`` (for ``$SRV.STATS``)."""
        return readings(self.metrics())


def readings(metrics: Iterable[Metric]) -> dict[str, float]:
    """Every sample of ``metrics`` but histogram buckets, as ``name{labels}: value``."""
    out: dict[str, float] = {}
    for metric in metrics:
        for suffix, labels, value in metric.samples:
            if suffix != "_bucket":
                out[f"{metric.name}{suffix}{_labels(labels)}"] = value
    return out


def log_fields(metrics: Iterable[Metric]) -> dict[str, float]:
    """The readings of ``metrics`` as log fields (``relay_events_total.p0=12``)."""
    return {flat_name(name): value for name, value in readings(metrics).items()}


def flat_name(reading: str) -> str:
    """A reading's name without quotes or braces (a log field, a column):
    ``relay_events_total{store="p0"}`` -> ``relay_events_total.p0``."""
    name, _, labels = reading.partition("{")
    values = [part.split("=", 1)[1].strip('"') for part in labels.rstrip("}").split(",") if "=" in part]
    return ".".join([name, *values])


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{key}="{_escape(str(value))}"' for key, value in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')

