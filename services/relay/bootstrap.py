"""The relay's composition root: ``studroom serve relay``.

It opens the stores (PostgreSQL schemas) and runs a :class:`~.relay.Relay` over them
until ``stop``; embedded servers are started when the settings name none. Heavy
imports wait inside the functions, so that ``studroom serve --help`` stays quick.
Options and design: docs/design/relay.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

from ..runtime.arguments import MAX_REPLICAS, int_range, positive_float, positive_int
from ..runtime.observability.logs import fields
from ..runtime.settings import Settings
from ..store.layout import store_schemas
from ..wire import subjects
from .config import RelayConfig

if TYPE_CHECKING:
    from ..store.postgres import PostgresEventStore
    from .relay import Relay

HELP = "the relay: stored events -> JetStream, public and private views, exactly once"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stores", type=int_range(1, subjects.PARTITIONS), default=1,
                        help="number of partitioned stores: schemas studroom_p0 .. studroom_p{N-1}")
    parser.add_argument("--schema", action="append", default=None,
                        help="a store's schema (repeatable; replaces --stores)")
    parser.add_argument("--batch-size", type=positive_int, default=RelayConfig.batch_size)
    parser.add_argument("--poll-interval", type=positive_float, default=RelayConfig.poll_interval)
    parser.add_argument("--replicas", type=int_range(1, MAX_REPLICAS), default=RelayConfig.replicas,
                        help="stream replicas (production: 3)")
    parser.add_argument("--private-max-age", type=positive_float, default=RelayConfig.private_max_age, metavar="SECONDS",
                        help="how long the private stream keeps players' down cards (default 86400: 24 h)")
    parser.add_argument("--public-max-age", type=positive_float, default=RelayConfig.public_max_age, metavar="SECONDS",
                        help="how long the public stream keeps events (default 604800: 7 days)")
    parser.add_argument("--private-max-bytes", type=positive_int, default=RelayConfig.private_max_bytes,
                        metavar="BYTES", help="the most the private stream keeps, oldest dropped (default 1 GiB)")
    parser.add_argument("--public-max-bytes", type=positive_int, default=RelayConfig.public_max_bytes,
                        metavar="BYTES", help="the most the public stream keeps, oldest dropped (default 4 GiB)")


def relay_config(args: argparse.Namespace) -> RelayConfig:
    """The relay's settings from its options (checked as they were parsed)."""
    return RelayConfig(batch_size=args.batch_size, poll_interval=args.poll_interval, replicas=args.replicas,
                       private_max_age=args.private_max_age, public_max_age=args.public_max_age,
                       private_max_bytes=args.private_max_bytes, public_max_bytes=args.public_max_bytes)


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from ..runtime.processes import observe
    from .metrics import relay_backlog, relay_metrics

    observer = observe.start(args, settings, "relay", stop)

    def ready(relay: Relay) -> None:
        observer.add(relay_metrics(relay))
        observer.poll(relay_backlog(relay))
        observer.ready(lambda: {"ready": relay.connected.is_set(), "stores": len(relay.stores)})

    relay = await serve_relay(settings, store_schemas=args.schema or store_schemas(args.stores),
                              stop=stop, config=relay_config(args), on_ready=ready,
                              layout=None if args.schema else args.stores)
    for name, stats in relay.stats().items():
        log.info("relay stops", extra=fields(store=name, **asdict(stats)))


async def serve_relay(
    settings: Settings,
    *,
    store_schemas: list[str],
    stop: asyncio.Event | None = None,
    config: RelayConfig | None = None,
    on_ready: Callable[[Relay], None] | None = None,
    layout: int | None = None,
) -> Relay:
    """Relay the stores in ``store_schemas`` (one PostgreSQL schema each) until
    ``stop`` is set (or the task is cancelled), as the service "relay". Returns the
    relay (its stats). ``layout``: the number of stores the installation must have
    recorded (``--stores``; None when the schemas were named one by one)."""
    from ..runtime.processes.credentials import credentials
    from ..runtime.processes.preflight import preflight_url
    from ..runtime.processes.starting import until_started
    from ..runtime.servers.external_or_embedded import servers
    from ..store.inspect import store_url
    from ..store.layout import check_recorded_layout
    from ..store.commits import Commits
    from ..store.postgres import PostgresEventStore
    from .relay import Relay
    from .store_relay import StoreRelay

    config = config or RelayConfig()
    stop = stop or asyncio.Event()
    if not store_schemas:
        raise ValueError("no store to relay")
    for schema in store_schemas:
        subjects.check_name(schema)
    creds = credentials(settings, "service", "relay")

    async def start(opened: contextlib.AsyncExitStack) -> list[StoreRelay]:
        """One attempt: the preflight, the recorded layout, the stores opened."""
        await preflight_url(nats_url, creds, "relay")
        if layout is not None:
            await asyncio.to_thread(check_recorded_layout, database_url, layout, urls=dict(settings.store_urls))
        stores = []
        for schema in store_schemas:
            url = await asyncio.to_thread(store_url, database_url, schema)     # its server (store/servers.py)
            store = await asyncio.to_thread(PostgresEventStore, url, schema=schema)
            opened.callback(_close_quietly, store)
            stores.append(StoreRelay(store, schema, config, commits=Commits.of(store, url)))
        return stores

    async with contextlib.AsyncExitStack() as exits:
        if settings.nats_url is None or settings.database_url is None:
            nats_url, database_url = exits.enter_context(servers(settings))
        else:
            nats_url, database_url = settings.nats_url, settings.database_url
        stores = await until_started("relay", exits, start, stop)
        if stores is None:          # stopped before the stores opened: nothing relayed
            return Relay(nats_url, [], config, creds=creds)
        relay = Relay(nats_url, stores, config, creds=creds)
        if on_ready is not None:
            on_ready(relay)
        try:
            await relay.serve(stop)
        finally:
            for store_relay in relay.stores:
                await store_relay.close()
        return relay


def _close_quietly(store: PostgresEventStore) -> None:
    with contextlib.suppress(Exception):
        store.close()
