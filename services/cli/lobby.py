"""``studroom lobby`` and ``studroom watch``: the lobby at a terminal.

    studroom lobby [--game G] [--stakes S] [--watch] [--for SECONDS]
    studroom watch TABLE [--lang en|de] [--for SECONDS]

Both connect as the public spectator (``STUDROOM_NATS_CREDS``, else the room's
``spectator.public``; a service's credentials are refused before connecting) to the
room's NATS: ``STUDROOM_NATS_URL``, else the embedded one of the data folder (the
running room's, or started for the moment on a stopped room's data, where the lobby's
bucket keeps the tables as they were: read as the folder's lobby service).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from studroom.domain.games import GAMES
from studroom.projections.lobby.rendering import LANGUAGES

from ..runtime.arguments import positive_float
from .table import stakes as table_stakes

SPECTATOR = ("spectator", "public")     # the room's public identity (services/room/bots.py)
ASKERS = ("spectator", "player", "operator")    # the roles that may ask the lobby (auth/powers.py)


def add_commands(commands: argparse._SubParsersAction) -> None:
    lobby = commands.add_parser("lobby", help="the lobby: every table, its seats and figures (live with --watch)")
    lobby.add_argument("--game", choices=sorted(GAMES), help="only tables of this game")
    lobby.add_argument("--stakes", type=stakes, metavar="SMALL/BIG",
                       help="only tables of these stakes, e.g. 20/40 (or 20-40)")
    lobby.add_argument("--watch", action="store_true", help="redraw as the tables change (Ctrl-C stops)")
    _add_for(lobby)
    lobby.set_defaults(run=_lobby)
    watch = commands.add_parser("watch", help="one table as a spectator sees it, as the hand runs")
    watch.add_argument("table", help="the table id")
    watch.add_argument("--lang", choices=LANGUAGES, default="en", help="the dealer's language (default en)")
    _add_for(watch)
    watch.set_defaults(run=_watch)


def stakes(text: str) -> str:
    """``20/40`` or ``20-40`` (as ``studroom table`` takes them) as the lobby names
    stakes, ``20/40``: checked before anything connects, a bad value is a usage error."""
    small, big = table_stakes(text)
    return f"{small}/{big}"


def _add_for(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--for", dest="seconds", type=positive_float, default=None, metavar="SECONDS",
                        help="stop after this long (default: until Ctrl-C)")


def _lobby(args: argparse.Namespace) -> int:
    from studroom.projections.lobby.queries import LobbyQuery
    from studroom.projections.lobby.rendering import lobby_text
    from studroom.projections.lobby.watching import Screen, ask, watch_lobby

    query = LobbyQuery(game=args.game, stakes=args.stakes)
    screen = Screen(sys.stdout)

    async def show(room: Room, stop: asyncio.Event) -> None:
        if room.stopped:
            screen.show(lobby_text(await _stopped_tables(room, query)))
        elif args.watch:
            await watch_lobby(room.nc, query, screen, stop)
        else:
            screen.show(lobby_text(await ask(room.nc, query)))

    return _run(show, args.seconds)


def _watch(args: argparse.Namespace) -> int:
    from studroom.projections.lobby.queries import LobbyQuery
    from studroom.projections.lobby.rendering import table_text
    from studroom.projections.lobby.watching import Screen, now_ms, watch_table

    async def show(room: Room, stop: asyncio.Event) -> None:
        if room.stopped:
            entry, = await _stopped_tables(room, LobbyQuery(table=args.table))
            Screen(sys.stdout).show(table_text(entry, now_ms(), args.lang))
        else:
            await watch_table(room.nc, args.table, args.lang, Screen(sys.stdout), stop)

    return _run(show, args.seconds)


async def _stopped_tables(room: Room, query: Any) -> list[Any]:
    """A stopped room's tables as the lobby's bucket keeps them, answered as the lobby
    would answer with no table service running: each stopped, its figures those of its
    last hour of play."""
    from studroom.projections.lobby.mirror import read_all
    from studroom.projections.lobby.queries import BadQuery, select
    from studroom.projections.lobby.watching import LobbyUnavailable, now_ms

    try:
        return select(await read_all(room.nc), query, now_ms(), served=lambda table_id: False)
    except BadQuery as e:
        raise LobbyUnavailable(f"{e.code}: {e}") from None


class LobbyRefused(Exception):
    """Settings that cannot work (credentials that may not ask the lobby): exit code 2."""


@dataclass
class Room:
    """The connection to the room's NATS; ``stopped``: the room is not running (this
    command started its embedded NATS on the data folder, and reads the lobby's bucket
    itself, as the lobby service)."""

    nc: Any
    stopped: bool


def _run(show: Callable[[Room, asyncio.Event], Awaitable[None]], seconds: float | None) -> int:
    """Run ``show`` connected to the room until it returns, ``seconds`` pass or Ctrl-C;
    the exit code (1: the lobby did not answer; 2: credentials that may not ask it)."""
    from studroom.projections.lobby.watching import LobbyUnavailable

    from ..runtime.processes import process
    from ..runtime.settings import Settings

    async def main() -> None:
        async with _room(Settings.from_env()) as room:
            with process.stop_on_signals() as stop:
                if seconds is not None:
                    asyncio.get_running_loop().call_later(seconds, stop.set)
                await show(room, stop)

    process.configure_logging("WARNING")
    try:
        asyncio.run(main())
    except LobbyUnavailable as e:
        print(f"studroom: {e}", file=sys.stderr)
        return 1
    except LobbyRefused as e:
        print(f"studroom: {e}", file=sys.stderr)
        return 2
    return 0


@contextlib.asynccontextmanager
async def _room(settings: Any) -> AsyncIterator[Room]:
    """The settings' NATS, else the data folder's embedded one: the running room's, or
    started here for the moment (a stopped room)."""
    from studroom.projections.lobby.service import SENDER

    from ..auth.authority import room_authority
    from ..runtime.processes import process
    from ..runtime.servers.embedded_nats import EmbeddedNats
    from ..runtime.servers.server_process import EmbeddedServerError

    url, embedded = settings.nats_url, None
    if url is None:
        embedded = EmbeddedNats(settings.data_dir)
        try:
            await asyncio.to_thread(embedded.start)
            url = embedded.url
        except EmbeddedServerError:
            url, embedded = _running_room_url(embedded), None
    # a NATS started here on the folder: its Authority's lobby identity reads the bucket
    creds = (room_authority(settings.data_dir).ensure("service", SENDER) if embedded is not None
             else _spectator_credentials(settings))
    try:
        nc = await process.connect(url, "studroom-lobby-cli", creds=creds, max_reconnect_attempts=3)
        try:
            yield Room(nc, stopped=embedded is not None)
        finally:
            await nc.drain()
    finally:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)


def _spectator_credentials(settings: Any) -> Any:
    """The credentials to ask a running room's lobby with: the configured ones, else the
    room's spectator.  Configured ones that may not ask the lobby or read public events
    (a service's, set for ``studroom serve``) are refused here in one line, before the
    server would answer each with a permissions violation."""
    from ..auth.authority import identity_of
    from ..runtime.processes.credentials import credentials
    from ..runtime.settings import NATS_CREDS_VAR

    creds = credentials(settings, *SPECTATOR)
    if settings.nats_creds is not None:
        role, name = identity_of(settings.nats_creds)
        if role not in ASKERS:
            raise LobbyRefused(f"{NATS_CREDS_VAR} holds the credentials of {role} {name!r}, who may not "
                               f"ask the lobby or watch a table: set it to a spectator's, a player's or "
                               f"an operator's")
    return creds


def _running_room_url(embedded: Any) -> str:
    """The URL of the embedded NATS another process runs on this data folder."""
    try:
        return f"nats://127.0.0.1:{int((embedded.home / 'port').read_text())}"
    except (OSError, ValueError):
        raise SystemExit(f"studroom: no NATS: the embedded one in {embedded.home} cannot start, "
                         "and none runs there") from None
