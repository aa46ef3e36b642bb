"""The table service's composition root: ``studroom serve table``.

It opens the event stores (one PostgreSQL schema each), connects to NATS and runs a
:class:`~.service.TableService` until ``stop``; embedded servers are started when the
settings name none.  Heavy imports wait inside the functions, so that
``studroom serve --help`` stays quick.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..runtime.arguments import (
    MAX_REPLICAS,
    int_range,
    name,
    non_negative_int,
    positive_float,
    positive_int,
)
from ..runtime.processes.observe import default_instance
from ..runtime.settings import Settings
from ..store.layout import STORE_SCHEMA_PREFIX, store_schema
from ..wire import subjects
from .partitions import DEFAULT_LEASE_TTL, LEASE_BUCKET, spread

if TYPE_CHECKING:
    from .service import TableService

HELP = "the table service: commands in, events stored (partition leases, group commit)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--instance-id", type=name,
                        help="a name unique among the running instances (default: host-pid)")
    parser.add_argument("--stores", type=int_range(1, subjects.PARTITIONS), default=1,
                        help="event stores (schemas); the same for all instances (default 1)")
    parser.add_argument("--partitions", type=positive_int, default=subjects.PARTITIONS,
                        help="partitions of the server's subject mapping (default %(default)s)")
    parser.add_argument("--pause-ms", type=non_negative_int, default=0, help="pause between hands (default 0)")
    parser.add_argument("--lease-ttl", type=positive_float, default=DEFAULT_LEASE_TTL,
                        help="partition lease TTL in seconds (default %(default)s)")
    parser.add_argument("--replicas", type=int_range(1, MAX_REPLICAS), default=1,
                        help="replicas of the lease bucket when created (production: 3)")
    parser.add_argument("--lease-bucket", default=LEASE_BUCKET, help=argparse.SUPPRESS)
    parser.add_argument("--schema-prefix", default=STORE_SCHEMA_PREFIX, help=argparse.SUPPRESS)


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from ..runtime.processes import observe
    from .metrics import table_metrics

    args.instance_id = args.instance_id or default_instance()
    observer = observe.start(args, settings, "table", stop)

    def ready(service: TableService) -> None:
        observer.add(table_metrics(service))
        observer.responder(service.door)
        observer.ready(lambda: {"partitions": len(service.owned())})
        print(f"table service {service.instance_id} ready: partitions {spread(service.owned())}", flush=True)

    await serve_table(
        settings, instance_id=args.instance_id, stores=args.stores, partitions=args.partitions,
        stop=stop, pause_ms=args.pause_ms, lease_ttl=args.lease_ttl,
        lease_bucket=args.lease_bucket, schema_prefix=args.schema_prefix, on_ready=ready,
        replicas=args.replicas,
    )


async def serve_table(
    settings: Settings,
    *,
    instance_id: str | None = None,
    stores: int = 1,
    partitions: int = subjects.PARTITIONS,
    stop: asyncio.Event | None = None,
    pause_ms: int = 0,
    lease_ttl: float = DEFAULT_LEASE_TTL,
    lease_bucket: str = LEASE_BUCKET,
    schema_prefix: str = STORE_SCHEMA_PREFIX,
    on_ready: Callable[[TableService], None] | None = None,
    replicas: int = 1,
) -> None:
    """Run one table-service instance until ``stop`` is set.

    ``settings`` name the NATS and PostgreSQL servers (embedded ones are started in
    ``settings.data_dir`` when unset) and the service's NATS credentials. ``partitions`` must match the server's subject
    mapping and ``stores`` must be the same for every instance of an installation:
    tables live in schema ``{schema_prefix}{partition % stores}``.
    """
    from ..runtime.processes import process
    from ..runtime.processes.credentials import credentials
    from ..runtime.processes.preflight import preflight
    from ..runtime.processes.starting import until_started
    from ..runtime.servers.external_or_embedded import servers
    from ..store.layout import check_recorded_layout
    from ..store.postgres import PostgresEventStore
    from .service import TableService

    stop = stop or asyncio.Event()
    instance_id = instance_id or default_instance()

    async def start(opened: contextlib.AsyncExitStack) -> TableService:
        """One attempt: the stores, the connections, the preflight, the service started."""
        where = await asyncio.to_thread(check_recorded_layout, database_url, stores, schema_prefix,
                                        dict(settings.store_urls))
        event_stores = []
        for j in range(stores):
            store = await asyncio.to_thread(
                PostgresEventStore, where.url(j), schema=store_schema(j, schema_prefix),
                pool_size=1, max_overflow=2,   # reads only: appends go on its asyncio connection
            )
            opened.callback(store.close)
            event_stores.append(store)
        nc = await process.connect(nats_url, f"studroom-table-{instance_id}",
                                   creds=credentials(settings, "service", "table"))
        opened.push_async_callback(process.drain, nc)
        await preflight(nc, sender=("service", "table"), partitions=partitions)
        door_nc = await process.connect_door(nats_url, settings, "table", f"studroom-table-{instance_id}")
        opened.push_async_callback(process.drain, door_nc)
        service = TableService(
            nc, event_stores, instance_id=instance_id, partitions=partitions, pause_ms=pause_ms,
            lease_ttl=lease_ttl, lease_bucket=lease_bucket, replicas=replicas, door_nc=door_nc,
        )
        opened.push_async_callback(service.close)
        await service.start()
        return service

    async with contextlib.AsyncExitStack() as exits:
        nats_url, database_url = exits.enter_context(servers(settings))
        service = await until_started("table", exits, start, stop)
        if service is None:
            return
        if on_ready is not None:
            on_ready(service)
        await stop.wait()
