"""One bot player's composition root: ``studroom serve bot``.

The bot connects as the player ``--player``: with ``STUDROOM_NATS_CREDS``, or, next to
a room running in the data folder, with the credentials its Authority issues that
player.  A player may not credit himself chips: with ``--cashier`` the bot buys in and
tops up through the cashier, from its own account; without it the bot plays the
chips someone credits to its seat.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import random

from ..runtime.arguments import name, non_negative_int
from ..runtime.processes import process
from ..runtime.processes.credentials import credentials
from ..runtime.servers.attach import needed_nats_url
from ..runtime.settings import Settings

HELP = "one bot player at one table (random legal moves)"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", type=name, required=True)
    parser.add_argument("--seat", type=non_negative_int, required=True)
    parser.add_argument("--player", type=name, required=True)
    parser.add_argument("--pace", type=non_negative_int, default=500, metavar="MS", help="think time (default 500)")
    parser.add_argument("--seed", type=int, default=None, help="random seed of its decisions")
    parser.add_argument("--cashier", action="store_true",
                        help="buy in and top up through the cashier, from the player's account "
                             "(default: wait to be credited)")


async def serve(args: argparse.Namespace, settings: Settings, stop: asyncio.Event) -> None:
    """Play one seat until ``stop`` is set; then give the seat up."""
    from ..client.cashier import CashierClient
    from ..client.table import TableClient
    from ..runtime.processes.starting import until_started
    from .bank import CashierBank
    from .bot import Bot

    url = needed_nats_url(settings)

    async def start(opened: contextlib.AsyncExitStack) -> Bot:
        """One attempt: the player's connection, the bot looking at its table and sitting down."""
        nc = await process.connect(url, f"studroom-bot-{args.player}",
                                   creds=credentials(settings, "player", args.player))
        opened.push_async_callback(process.drain, nc)
        bank = CashierBank(CashierClient(nc, "player", args.player)) if args.cashier else None
        started = Bot(TableClient(nc, "player", args.player), args.table, args.seat,
                      random.Random(args.seed), args.pace, bank=bank, record=False, count_hands=True)
        opened.push_async_callback(started.stop)
        await started.start()
        return started

    async with contextlib.AsyncExitStack() as exits:
        bot = await until_started(f"bot {args.player}", exits, start, stop)
        if bot is None:
            return
        if not bot.seated:
            raise SystemExit(f"{args.player} could not sit down in seat {args.seat} of {args.table}")
        log.info("%s plays seat %d of %s", args.player, args.seat, args.table)
        await stop.wait()
        bot.pause()
        await bot.leave()         # nobody plays this seat any more
    stats = bot.stats
    print(f"{args.player}: {stats.actions} actions, {stats.hands} hands, {stats.errors} errors")

