"""The table service's composition root: ``studroom serve table``."""

from __future__ import annotations

import argparse
import asyncio

from ..runtime.settings import Settings
from ..store.layout import STORE_SCHEMA_PREFIX
from ..wire import subjects
from .partitions import DEFAULT_LEASE_TTL, LEASE_BUCKET, spread

HELP = "the table service: commands in, events stored (partition leases, group commit)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--instance-id", help="a name unique among the running instances (default: host-pid)")
    parser.add_argument("--stores", type=int, default=1,
                        help="event stores (schemas); the same for all instances (default 1)")
    parser.add_argument("--partitions", type=int, default=subjects.PARTITIONS,
                        help="partitions of the server's subject mapping (default %(default)s)")
    parser.add_argument("--pause-ms", type=int, default=0, help="pause between hands (default 0)")
    parser.add_argument("--lease-ttl", type=float, default=DEFAULT_LEASE_TTL,
                        help="partition lease TTL in seconds (default %(default)s)")
    parser.add_argument("--lease-bucket", default=LEASE_BUCKET, help=argparse.SUPPRESS)
    parser.add_argument("--schema-prefix", default=STORE_SCHEMA_PREFIX, help=argparse.SUPPRESS)


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from .service import TableService, serve_table

    def ready(service: TableService) -> None:
        print(f"table service {service.instance_id} ready: partitions {spread(service.owned())}", flush=True)

    await serve_table(
        settings, instance_id=args.instance_id, stores=args.stores, partitions=args.partitions,
        stop=stop, pause_ms=args.pause_ms, lease_ttl=args.lease_ttl,
        lease_bucket=args.lease_bucket, schema_prefix=args.schema_prefix, on_ready=ready,
    )
