"""The timer service's composition root: ``studroom serve timer``."""

from __future__ import annotations

import argparse
import asyncio

from ..runtime.settings import Settings

HELP = "the timer service: times out turns at their deadline (JetStream message schedules)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--instance-id", default=None, help="name in logs (default: host-pid)")
    parser.add_argument("--replicas", type=int, default=1,
                        help="replicas of the timer stream and bucket when created (production: 3)")
    parser.add_argument("--stats-every", type=float, default=30.0, metavar="SECONDS",
                        help="log the counters this often (0: never; default 30)")


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from .service import serve_timer

    await serve_timer(settings, instance_id=args.instance_id, stop=stop,
                      replicas=args.replicas, stats_every=args.stats_every)
