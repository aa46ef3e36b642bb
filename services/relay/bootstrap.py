"""The relay's composition root: ``studroom serve relay``."""

from __future__ import annotations

import argparse
import asyncio
import logging

from ..runtime.settings import Settings
from ..store.layout import store_schemas
from .relay import RelayConfig

HELP = "the relay: stored events -> JetStream, public and private views, exactly once"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stores", type=int, default=1,
                        help="number of partitioned stores: schemas studroom_p0 .. studroom_p{N-1}")
    parser.add_argument("--schema", action="append", default=None,
                        help="a store's schema (repeatable; replaces --stores)")
    parser.add_argument("--batch-size", type=int, default=RelayConfig.batch_size)
    parser.add_argument("--poll-interval", type=float, default=RelayConfig.poll_interval)
    parser.add_argument("--replicas", type=int, default=RelayConfig.replicas,
                        help="stream replicas (production: 3)")


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from .relay import serve_relay

    config = RelayConfig(batch_size=args.batch_size, poll_interval=args.poll_interval, replicas=args.replicas)
    relay = await serve_relay(settings, store_schemas=args.schema or store_schemas(args.stores),
                              stop=stop, config=config)
    for name, stats in relay.stats().items():
        log.info("relay %s: %s", name, stats)
