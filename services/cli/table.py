"""``studroom table ...``: the operator's tables, from a terminal.

    studroom table open t1 --game seven_card_stud --stakes 10-20 [--ante 1] [--bring-in 5]
                           [--rake 5%] [--rake-cap 30] [--buy-in 100-4000] [--turn-seconds 10] [--seats 8]
    studroom table list
    studroom table show t1
    studroom table configure t1 [--stakes 20-40] [--turn-seconds 15] [...as open, but --game and --seats]
    studroom table pause|resume|close t1
    studroom table sitout|remove t1 alice

Each connects as an operator (``--as NAME``, default "floor": cli/operator.py) and
sends the table's command on that operator's subject.  The domain validates what is
sent (``OpenTable``'s settings as every other sender's); a refusal is its code and
message in one line on stderr.  Exit code 0 when done, 1 when refused (or the room
did not answer), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import IO, TYPE_CHECKING, Any, Final

import msgspec
from studroom.domain.commands import (
    CloseTable,
    Command,
    ConfigureTable,
    PauseTable,
    RemovePlayer,
    ResumeTable,
    SitOutPlayer,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.games import GAMES

from ..runtime.arguments import USAGE_ERROR, name, non_negative_int, positive_int
from ..runtime.text import number, table
from .operator import add_operator_argument, operator_connection

if TYPE_CHECKING:
    from studroom.domain.views import SeatView, TableView

    from ..client.table import TableClient

OPEN_WITHIN: Final = 10.0      # seconds `table open` waits for a table service to take the table

Action = Callable[["TableClient", argparse.Namespace], Coroutine[Any, Any, int]]


class Refusal(Exception):
    """What the room answered instead of doing it: said in one line, exit code 1."""


class UsageError(Exception):
    """Options that cannot make a table's settings: said in one line, exit code 2."""


def add_commands(commands: argparse._SubParsersAction) -> None:
    group = commands.add_parser("table", help="an operator's tables: open, list, show, configure, pause, resume, "
                                              "close; sit a player out or remove him")
    actions = group.add_subparsers(dest="table_command", required=True)
    opening = actions.add_parser("open", help="open a table (the domain checks its settings)")
    opening.add_argument("table", type=name, help="the table id")
    opening.add_argument("--game", required=True, choices=sorted(GAMES))
    opening.add_argument("--seats", type=positive_int, help="seats at the table (the game caps the players)")
    _add_settings(opening, required=True)
    _common(opening, _open)
    listing = actions.add_parser("list", help="every table, as the lobby knows it")
    _common(listing, _list)
    showing = actions.add_parser("show", help="a table's settings, seats and state, as the table says them")
    showing.add_argument("table", type=name, help="the table id")
    _common(showing, _show)
    configuring = actions.add_parser("configure", help="new settings from the next hand (the game and the seats "
                                                       "stay)")
    configuring.add_argument("table", type=name, help="the table id")
    _add_settings(configuring, required=False)
    _common(configuring, _configure)
    for command, what in _TABLE_COMMANDS.items():
        parser = actions.add_parser(command, help=what.__doc__)
        parser.add_argument("table", type=name, help="the table id")
        _common(parser, _send_table_command)
    for command, what in _PLAYER_COMMANDS.items():
        parser = actions.add_parser(command, help=what.__doc__)
        parser.add_argument("table", type=name, help="the table id")
        parser.add_argument("player", type=name, help="the player, by name")
        _common(parser, _send_player_command)


def _add_settings(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument("--stakes", required=required, type=stakes, metavar="SMALL-BIG",
                        help="the small and the big bet, e.g. 10-20")
    parser.add_argument("--ante", type=non_negative_int, help="each player's ante (default none)")
    parser.add_argument("--bring-in", type=positive_int, help="the bring-in (default half the small bet)")
    parser.add_argument("--rake", type=percent, metavar="PERCENT", help="the rake of each pot, e.g. 5%% (default none)")
    parser.add_argument("--rake-cap", type=non_negative_int, help="the most rake of a hand (default no cap)")
    parser.add_argument("--buy-in", type=buy_in, metavar="[MIN-]MAX",
                        help="the buy-in bounds, e.g. 100-4000; MIN is the rules' (ten small bets), MAX the table's own "
                             "(default the room's maximum)")
    parser.add_argument("--turn-seconds", type=positive_int, help="a player's time to act")
    parser.add_argument("--sit-out-seconds", type=positive_int,
                        help="how long a player may sit out before he is removed and cashed out (R34)")


def _common(parser: argparse.ArgumentParser, action: Action) -> None:
    add_operator_argument(parser)
    parser.set_defaults(run=lambda args: _run(args, action))


def _run(args: argparse.Namespace, action: Action) -> int:
    async def main() -> int:
        from ..client.table import TableClient

        async with operator_connection(args.operator, "table") as nc:
            return await action(TableClient(nc, "operator", args.operator), args)

    try:
        return asyncio.run(main())
    except UsageError as e:
        print(f"studroom table {args.table_command}: {e}", file=sys.stderr)
        return USAGE_ERROR
    except Refusal as e:
        print(f"studroom table {args.table_command}: {e}", file=sys.stderr)
        return 1


# -- the options' values


def stakes(text: str) -> tuple[int, int]:
    """``SMALL-BIG`` (or ``SMALL/BIG``, as the lobby writes them): two whole numbers."""
    parts = text.replace("/", "-").split("-")
    if len(parts) != 2 or not all(part.isdecimal() for part in parts):
        raise argparse.ArgumentTypeError(f"expected SMALL-BIG, e.g. 10-20, got {text!r}")
    return int(parts[0]), int(parts[1])


def percent(text: str) -> int:
    """``5%`` (or ``5``, ``2.5%``) as basis points: 500, 250."""
    try:
        points = Decimal(text.removesuffix("%")) * 100
    except InvalidOperation:
        points = Decimal("NaN")
    if not points.is_finite() or points != points.to_integral_value() or not 0 <= points <= 10_000:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0% to 100% in hundredths, got {text!r}")
    return int(points)


def buy_in(text: str) -> tuple[int | None, int]:
    """``MAX`` or ``MIN-MAX``: whole numbers."""
    parts = text.split("-")
    if len(parts) not in (1, 2) or not all(part.isdecimal() for part in parts):
        raise argparse.ArgumentTypeError(f"expected MAX or MIN-MAX, e.g. 200-4000, got {text!r}")
    return (None, int(parts[0])) if len(parts) == 1 else (int(parts[0]), int(parts[1]))


def table_config(args: argparse.Namespace) -> TableConfig:
    """The settings ``table open`` sends: the options given, the domain's defaults for the rest."""
    small, big = args.stakes
    config = TableConfig(game=args.game, stakes=Stakes(small_bet=small, big_bet=big))
    return settings(msgspec.structs.replace(config, **_given(seats=args.seats)), args)


def settings(config: TableConfig, args: argparse.Namespace) -> TableConfig:
    """``config`` with the settings the options give changed (``table configure``: the
    table's own settings)."""
    small, big = args.stakes or (config.stakes.small_bet, config.stakes.big_bet)
    stakes_ = msgspec.structs.replace(config.stakes, small_bet=small, big_bet=big,
                                      **_given(ante=args.ante, bring_in=args.bring_in))
    rake = msgspec.structs.replace(config.rake, **_given(basis_points=args.rake, cap=args.rake_cap))
    lowest, highest = args.buy_in or (None, None)
    changed = msgspec.structs.replace(config, stakes=stakes_, rake=rake, **_given(
        max_buy_in=highest, action_seconds=args.turn_seconds, sit_out_seconds=args.sit_out_seconds))
    if lowest not in (None, changed.min_buy_in):
        raise UsageError(f"--buy-in: the least a player buys in at {small}-{big} is {changed.min_buy_in} "
                         f"(ten small bets, R3), not {lowest}")
    return changed


def _given(**options: Any) -> dict[str, Any]:
    """The options that were given (not None)."""
    return {key: value for key, value in options.items() if value is not None}


# -- the commands


async def _open(client: TableClient, args: argparse.Namespace) -> int:
    from ..client.floor import open_table

    config = table_config(args)
    _done(await open_table(client, args.table, config, within=OPEN_WITHIN))
    print(f"{args.table}: opened, {settings_text(config)}")
    return 0


async def _list(client: TableClient, args: argparse.Namespace) -> int:
    from studroom.projections.lobby.queries import LobbyQuery
    from studroom.projections.lobby.rendering import lobby_text
    from studroom.projections.lobby.watching import LobbyUnavailable, ask

    try:
        entries = await ask(client.nc, LobbyQuery())
    except LobbyUnavailable as e:
        raise Refusal(str(e)) from None
    print(lobby_text(entries))
    return 0


async def _show(client: TableClient, args: argparse.Namespace) -> int:
    print_view(await _view(client, args.table))
    return 0


async def _configure(client: TableClient, args: argparse.Namespace) -> int:
    """The table's settings as it says them, with the options' changes."""
    config = settings((await _view(client, args.table)).config, args)
    _done(await client.send(args.table, ConfigureTable(config=config)))
    print(f"{args.table}: from the next hand {settings_text(config)}")
    return 0


# table TABLE: a command for the whole table, and what is printed when it is done
_TABLE_COMMANDS: Final[dict[str, type[Command]]] = {"pause": PauseTable, "resume": ResumeTable, "close": CloseTable}
_TABLE_DONE: Final = {"pause": "paused: no new hand (the hand in play finishes)", "resume": "deals again",
                      "close": "closing: the hand in play finishes, every seat is cashed out, then it is closed"}
# table TABLE PLAYER: a command about one player
_PLAYER_COMMANDS: Final[dict[str, type[Command]]] = {"sitout": SitOutPlayer, "remove": RemovePlayer}
_PLAYER_DONE: Final = {"sitout": "sat out (dealt no hand until he sits in)",
                       "remove": "removed (his chips go back to his account)"}


async def _send_table_command(client: TableClient, args: argparse.Namespace) -> int:
    _done(await client.send(args.table, _TABLE_COMMANDS[args.table_command]()))
    print(f"{args.table}: {_TABLE_DONE[args.table_command]}")
    return 0


async def _send_player_command(client: TableClient, args: argparse.Namespace) -> int:
    _done(await client.send(args.table, _PLAYER_COMMANDS[args.table_command](player=args.player)))
    print(f"{args.table}: {args.player} {_PLAYER_DONE[args.table_command]}")
    return 0


async def _view(client: TableClient, table_id: str) -> TableView:
    from ..client.table import Refused

    try:
        return await client.view(table_id)
    except Refused as e:
        raise Refusal(f"{e.code}: {e.message}") from None


def _done(reply: Any) -> None:
    """Nothing, or the room's refusal as :class:`Refusal`."""
    if not reply.ok:
        raise Refusal(f"{reply.error.code}: {reply.error.message}" if reply.error else "refused")


# -- what is printed


def settings_text(config: TableConfig) -> str:
    """A table's settings in one line."""
    s = config.stakes
    rake = config.rake
    parts = [config.game, f"stakes {number(s.small_bet)}-{number(s.big_bet)}",
             f"ante {number(s.ante)}", f"bring-in {number(s.bring_in_amount)}",
             "no rake" if not rake.basis_points else
             f"rake {Decimal(rake.basis_points) / 100:g}%" + ("" if rake.cap is None else f" (at most {rake.cap})"),
             f"buy-in {number(config.min_buy_in)}-{number(config.buy_in_ceiling)}",
             f"turn {config.action_seconds} s", f"sat out at most {config.sit_out_seconds} s",
             f"{config.seats} seats"]
    return ", ".join(parts)


def print_view(view: TableView, out: IO[str] | None = None) -> None:
    """The table's settings (and those of its next hand), its state and its seats;
    ``out`` default: ``sys.stdout`` as it is at the call (a caller may redirect it)."""
    out = sys.stdout if out is None else out
    hand = f"hand {view.hand_no} in play" if view.hand is not None else (
        f"between hands, {view.hand_no} played" if view.hand_no else "no hand yet")
    print(f"{view.table_id}: {settings_text(view.config)}", file=out)
    if view.next_config is not None:
        print(f"{view.table_id}: from the next hand {settings_text(view.next_config)}", file=out)
    print(f"{view.table_id}: {view.state}, {hand} (version {number(view.version)})", file=out)
    rows = [[s.seat, s.player, s.stack, _seat_state(s)] for s in view.seats]
    print(table(["seat", "player", "stack", "state"], rows), file=out)
    if view.waiting or view.offer is not None:
        offer = "" if view.offer is None else (f"; seat {view.offer.seat} offered to {view.offer.player} until "
                                               + datetime.fromtimestamp(view.offer.until_ms / 1000, tz=UTC)
                                               .strftime("%H:%M:%S UTC"))
        print(f"{view.table_id}: waiting {', '.join(view.waiting) or 'nobody'}{offer}", file=out)


def _seat_state(seat: SeatView) -> str:
    """``in``, or since when and why he sits out (R34: removed past the table's limit)."""
    if not seat.sitting_out:
        return "in"
    why = {"own": "himself", "timed_out": "timed out", "operator": "by the floor"}.get(seat.sit_out_reason or "", "")
    since = "" if not seat.sitting_out_since_ms else datetime.fromtimestamp(
        seat.sitting_out_since_ms / 1000, tz=UTC).strftime(" since %H:%M:%S UTC")
    return f"sitting out{since}" + (f" ({why})" if why else "")
