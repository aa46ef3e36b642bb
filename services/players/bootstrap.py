"""One bot player's composition root: ``studroom serve bot``.

The bot connects as the player ``--player``: with ``STUDROOM_NATS_CREDS``, or, next to
a room running in the data folder, with the credentials its Authority issues that
player.  A player may not credit himself chips: ``--operator-creds`` names an
operator's credentials that buy the bot in (a stopgap until the cashier); without it
the bot plays the chips someone credits to its seat.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import random
from pathlib import Path
from typing import TYPE_CHECKING

from ..auth.authority import identity_of
from ..runtime import process
from ..runtime.credentials import credentials
from ..runtime.settings import Settings

if TYPE_CHECKING:
    from .bank import Bank

HELP = "one bot player at one table (random legal moves)"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", required=True)
    parser.add_argument("--seat", type=int, required=True)
    parser.add_argument("--player", required=True)
    parser.add_argument("--pace", type=int, default=500, metavar="MS", help="think time (default 500)")
    parser.add_argument("--seed", type=int, default=None, help="random seed of its decisions")
    parser.add_argument("--operator-creds", type=Path, default=None, metavar="FILE",
                        help="an operator's NATS credentials that credit the bot's buy-ins "
                             "(until the cashier; default: wait to be credited)")


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

    url = nats_url(settings)
    async with contextlib.AsyncExitStack() as stack:
        nc = await process.connect(url, f"studroom-bot-{args.player}",
                                   creds=credentials(settings, "player", args.player))
        stack.push_async_callback(nc.drain)
        bank = None if args.operator_creds is None else await _operator_bank(args.operator_creds, url, stack)
        bot = Bot(TableClient(nc, "player", args.player), args.table, args.seat,
                  random.Random(args.seed), args.pace, bank=bank, record=False, count_hands=True)
        stack.push_async_callback(bot.stop)
        await bot.start()
        if not bot.seated:
            raise SystemExit(f"{args.player} could not sit down in seat {args.seat} of {args.table}")
        log.info("%s plays seat %d of %s", args.player, args.seat, args.table)
        await stop.wait()
        bot.pause()
        await bot.leave()         # nobody plays this seat any more
    stats = bot.stats
    print(f"{args.player}: {stats.actions} actions, {stats.hands} hands, {stats.errors} errors")


async def _operator_bank(creds: Path, url: str, stack: contextlib.AsyncExitStack) -> Bank:
    """Buy-ins credited by the operator whose credentials are in ``creds``."""
    from .bank import OperatorBank
    from .client import TableClient

    role, name = identity_of(creds)
    if role != "operator":
        raise SystemExit(f"{creds}: the credentials of a {role}, not of an operator")
    nc = await process.connect(url, f"studroom-bank-{name}", creds=creds)
    stack.push_async_callback(nc.drain)
    return OperatorBank(TableClient(nc, role, name))
