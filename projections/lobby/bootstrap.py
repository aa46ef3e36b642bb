"""The lobby's composition root: ``studroom serve lobby``.

Connects to NATS as the service "lobby" (``STUDROOM_NATS_CREDS``; an embedded server
in operator mode, with the room's credentials, when ``STUDROOM_NATS_URL`` is unset),
declares the bucket and the consumer, and runs one
:class:`~studroom.projections.lobby.service.LobbyService` until stopped.  Light to
import: the CLI reads ``HELP`` and ``add_arguments`` of every process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from studroom.services.runtime.arguments import MAX_REPLICAS, int_range, name
from studroom.services.runtime.observability.logs import fields
from studroom.services.runtime.observability.metrics import log_fields
from studroom.services.runtime.settings import Settings
from studroom.services.wire.subjects import LEASE_BUCKET

from .ordering import EVERY

if TYPE_CHECKING:
    from .service import LobbyService, LobbyStats

HELP = "the lobby: every table's public picture in KV bucket studroom_lobby, answered by request"

log = logging.getLogger("studroom.lobby")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--instance-id", type=name, default=None,
                        help="names its consumer of the public stream, kept across restarts; each instance "
                             "needs its own (default: the host name)")
    parser.add_argument("--replicas", type=int_range(1, MAX_REPLICAS), default=1,
                        help="replicas of the lobby's bucket when created (production: 3)")
    parser.add_argument("--write-every-ms", type=int_range(0, 1000), default=int(EVERY * 1000),
                        help="a table's entry is written at most once in this many ms, with every event that "
                             "came meanwhile (default %(default)s; 0: a write per batch, as before issue 20)")
    parser.add_argument("--lease-bucket", default=LEASE_BUCKET, help=argparse.SUPPRESS)   # the table services'


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from studroom.services.runtime.processes import observe

    from .metrics import lobby_lag, lobby_metrics
    from .service import LobbyStats, default_instance_id

    stats, instance_id = LobbyStats(), args.instance_id or default_instance_id()
    observer = observe.start(args, settings, "lobby", stop, instance=instance_id)
    observer.add(lobby_metrics(stats))
    observer.poll(lobby_lag(observer, instance_id))
    await serve_lobby(settings, instance_id=instance_id, replicas=args.replicas, stop=stop, stats=stats,
                      lease_bucket=args.lease_bucket, every=args.write_every_ms / 1000, on_ready=lambda service: observer.responder(service.door))


async def serve_lobby(settings: Settings, *, instance_id: str | None = None, replicas: int = 1,
                      stop: asyncio.Event | None = None, stats: LobbyStats | None = None,
                      lease_bucket: str = LEASE_BUCKET, every: float = EVERY,
                      on_ready: Callable[[LobbyService], object] | None = None) -> LobbyStats:
    """Run one lobby instance until ``stop`` is set (forever if None); its counters.
    ``on_ready(service)`` is called once it is set up.  ``lease_bucket``: the table
    services' leases (tests and benchmarks give theirs a bucket of their own)."""
    from studroom.services.runtime.processes import process
    from studroom.services.runtime.processes.credentials import credentials, masked_url
    from studroom.services.runtime.processes.preflight import preflight
    from studroom.services.runtime.processes.starting import until_started
    from studroom.services.runtime.servers.embedded_nats import EmbeddedNats

    from .leases import Leases
    from .metrics import lobby_metrics
    from .service import SENDER, LobbyService, LobbyStats, default_instance_id

    stop = stop if stop is not None else asyncio.Event()
    stats = stats if stats is not None else LobbyStats()
    instance_id = instance_id or default_instance_id()
    service: LobbyService | None = None

    async def reconnected() -> None:
        if service is not None:
            service.reconnected()

    async def start(opened: contextlib.AsyncExitStack) -> LobbyService | None:
        """One attempt: the connections, the preflight, the bucket and the consumer
        (None: ``stop`` came while waiting for the relay's public stream)."""
        nc = await process.connect(url, f"studroom-lobby-{instance_id}", reconnect_time_wait=0.25,
                                   creds=credentials(settings, "service", SENDER), reconnected_cb=reconnected)
        opened.push_async_callback(process.drain, nc)
        await preflight(nc, sender=("service", SENDER))
        door_nc = await process.connect_door(url, settings, SENDER, f"studroom-lobby-{instance_id}",
                                             reconnect_time_wait=0.25)
        opened.push_async_callback(process.drain, door_nc)
        made = LobbyService(nc, instance_id=instance_id, replicas=replicas, stats=stats, door_nc=door_nc,
                            leases=Leases(lease_bucket), every=every)
        return made if await made.setup(stop) else None

    async with contextlib.AsyncExitStack() as exits:
        url = settings.nats_url or exits.enter_context(EmbeddedNats(settings.data_dir)).url
        service = await until_started("lobby", exits, start, stop)
        if service is not None:
            if on_ready is not None:
                on_ready(service)
            log.info("lobby %s: NATS %s", instance_id, masked_url(url))
            await service.run(stop)
        log.info("lobby stops", extra=fields(instance=instance_id, **log_fields(lobby_metrics(stats)())))
    return stats
