"""The timer service's composition root: ``studroom serve timer``.

Connects to NATS as the service "timer" (``STUDROOM_NATS_CREDS``; an embedded server
in operator mode, with the room's credentials, when ``STUDROOM_NATS_URL`` is unset:
development only), declares the timer's stream, consumers and bucket, and runs one
:class:`~studroom.services.timer.service.TimerService` until stopped.  Light to import:
the CLI reads ``HELP`` and ``add_arguments`` of every process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
from pathlib import Path

from ..runtime.arguments import MAX_REPLICAS, int_range, non_negative_float
from ..runtime.observability.logs import fields
from ..runtime.observability.metrics import log_fields
from ..runtime.settings import Settings
from .metrics import timer_metrics
from .stats import TimerStats

HELP = ("the timer service: ends turns and pauses between hands at their deadline (a local wheel; "
        "JetStream message schedules as the durable backstop)")

log = logging.getLogger("studroom.timer")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--instance-id", default=None, help="name in logs (default: host-pid)")
    parser.add_argument("--replicas", type=int_range(1, MAX_REPLICAS), default=1,
                        help="replicas of the timer stream and bucket when created (production: 3)")
    parser.add_argument("--stats-every", type=non_negative_float, default=30.0, metavar="SECONDS",
                        help="log the counters this often (0: never; default 30)")


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from ..runtime.processes import observe

    stats = TimerStats()
    observe.start(args, settings, "timer", stop).add(timer_metrics(stats))
    await serve_timer(settings, instance_id=args.instance_id, stop=stop,
                      replicas=args.replicas, stats_every=args.stats_every, stats=stats)


async def serve_timer(
    settings: Settings,
    *,
    instance_id: str | None = None,
    stop: asyncio.Event | None = None,
    replicas: int = 1,
    stats_every: float = 30.0,
    stats: TimerStats | None = None,
) -> TimerStats:
    """Run one timer-service instance until ``stop`` is set (forever if None); its counters."""
    from ..runtime.processes.credentials import credentials
    from .timeouts import SENDER

    stop = stop if stop is not None else asyncio.Event()
    stats = stats if stats is not None else TimerStats()
    creds = credentials(settings, "service", SENDER)
    if settings.nats_url is not None:
        await _serve(settings.nats_url, creds, instance_id, stop, replicas, stats_every, stats)
        return stats
    from ..runtime.servers.embedded_nats import EmbeddedNats

    embedded = EmbeddedNats(settings.data_dir)
    await asyncio.to_thread(embedded.start)
    try:
        await _serve(embedded.url, creds, instance_id, stop, replicas, stats_every, stats)
    finally:
        await asyncio.to_thread(embedded.stop)
    return stats


async def _serve(url: str, creds: Path | None, instance_id: str | None, stop: asyncio.Event, replicas: int,
                 stats_every: float, stats: TimerStats) -> None:
    """Connect (as ``creds``' identity), set up, pull until ``stop``; a lost connection
    is the client's to restore."""
    from ..runtime.processes import process
    from ..runtime.processes.credentials import masked_url
    from ..runtime.processes.preflight import preflight
    from ..runtime.processes.starting import until_started
    from .service import TimerService
    from .timeouts import SENDER

    service: TimerService | None = None

    async def reconnected() -> None:
        # process.connect says the outage and its end; the open pull requests are lost
        if service is not None:
            service.reconnected()

    async def start(opened: contextlib.AsyncExitStack) -> TimerService | None:
        """One attempt: the connection, the preflight, the set-up (None: ``stop`` came first)."""
        nc = await process.connect(url, f"studroom-timer-{instance_id or os.getpid()}", creds=creds,
                                   reconnect_time_wait=0.25, reconnected_cb=reconnected)
        opened.push_async_callback(process.drain, nc)
        await preflight(nc, sender=("service", SENDER))
        made = TimerService(nc, instance_id=instance_id, replicas=replicas, stats=stats)
        return made if await made.setup(stop) else None

    async with contextlib.AsyncExitStack() as exits:
        service = await until_started("timer", exits, start, stop)
        if service is None:
            return
        nc = service.nc
        log.info("timer service %s: NATS %s", service.instance_id,
                 masked_url(nc.connected_url.geturl() if nc.connected_url else url))
        reporter = asyncio.create_task(_report(stats, stop, stats_every))
        try:
            await service.run(stop)
        finally:
            reporter.cancel()
        log.info("timer service stops", extra=fields(instance=service.instance_id, **log_fields(timer_metrics(stats)())))


async def _report(stats: TimerStats, stop: asyncio.Event, every: float) -> None:
    """Log the counters every ``every`` seconds until ``stop`` (0: never)."""
    if every <= 0:
        return
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        log.info("timer stats", extra=fields(**log_fields(timer_metrics(stats)())))
