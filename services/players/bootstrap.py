"""One bot player's composition root: ``studroom serve bot``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
from pathlib import Path

from ..runtime import process
from ..runtime.settings import Settings

HELP = "one bot player at one table (random legal moves)"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", required=True)
    parser.add_argument("--seat", type=int, required=True)
    parser.add_argument("--player", required=True)
    parser.add_argument("--pace", type=int, default=500, metavar="MS", help="think time (default 500)")
    parser.add_argument("--seed", type=int, default=None, help="random seed of its decisions")


def nats_url(settings: Settings) -> str:
    """``STUDROOM_NATS_URL``, or the embedded NATS a room runs in the data folder."""
    if settings.nats_url:
        return settings.nats_url
    port_file = Path(settings.data_dir) / "nats" / "port"
    try:
        port = int(port_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        msg = (f"no NATS: set STUDROOM_NATS_URL, or start `studroom room` with the data "
               f"folder {settings.data_dir} first")
        raise SystemExit(msg) from None
    return f"nats://127.0.0.1:{port}"


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    """Play one seat until ``stop`` is set; then give the seat up."""
    from .bot import Bot
    from .client import TableClient

    nc = await process.connect(nats_url(settings), f"studroom-bot-{args.player}")
    bot = Bot(nc, TableClient(nc), args.table, args.seat, args.player, random.Random(args.seed),
              args.pace, record=False, count_hands=True, js=nc.jetstream())
    try:
        await bot.start()
        if not bot.seated:
            raise SystemExit(f"{args.player} could not sit down in seat {args.seat} of {args.table}")
        log.info("%s plays seat %d of %s", args.player, args.seat, args.table)
        await stop.wait()
        bot.pause()
        await bot.leave()         # nobody plays this seat any more
    finally:
        await bot.stop()
        await nc.drain()
    stats = bot.stats
    print(f"{args.player}: {stats.actions} actions, {stats.hands} hands, {stats.errors} errors")
