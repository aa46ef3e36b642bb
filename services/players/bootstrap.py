"""One bot player's composition root: ``studroom serve bot``."""

from __future__ import annotations

import argparse
import asyncio

from ..runtime.settings import Settings

HELP = "one bot player at one table (random legal moves)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", required=True)
    parser.add_argument("--seat", type=int, required=True)
    parser.add_argument("--player", required=True)
    parser.add_argument("--pace", type=int, default=500, metavar="MS", help="think time (default 500)")
    parser.add_argument("--seed", type=int, default=None, help="random seed of its decisions")


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    from .bot import nats_url_for, serve_bot

    stats = await serve_bot(nats_url_for(settings), args.table, args.seat, args.player,
                            pace_ms=args.pace, seed=args.seed, stop=stop)
    print(f"{args.player}: {stats.actions} actions, {stats.hands} hands, {stats.errors} errors")
