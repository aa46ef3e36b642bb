"""``studroom cashier ...``: an operator's requests to a running cashier, from a terminal.

    studroom cashier deposit alice 5000 --reference wire-0042
    studroom cashier withdraw alice 200 --reference payout-17
    studroom cashier balance alice
    studroom cashier movements alice [--csv]

They connect as an operator (``--as NAME``, default "floor"): with
``STUDROOM_NATS_CREDS``, or, next to a room running in the data folder, with the
credentials its Authority issues that operator.  Exit code 0 when the cashier agreed,
1 when it refused (its code and message on stderr), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import sys
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

import msgspec
from studroom.domain.account import balance_change

from ..runtime.arguments import positive_int
from ..runtime.text import number, table
from ..wire.cashier_protocol import CashierReply, Movement
from .operator import add_operator_argument, operator_connection

if TYPE_CHECKING:
    from ..client.cashier import CashierClient

Ask = Callable[["CashierClient", argparse.Namespace], Coroutine[Any, Any, CashierReply]]
Show = Callable[[CashierReply, argparse.Namespace], None]


def add_commands(commands: argparse._SubParsersAction) -> None:
    group = commands.add_parser("cashier", help="players' accounts: deposits, withdrawals, balances, movements")
    actions = group.add_subparsers(dest="cashier", required=True)
    for name, what in (("deposit", "chips into a player's account"),
                       ("withdraw", "chips out of a player's account")):
        move = actions.add_parser(name, help=what)
        move.add_argument("player")
        move.add_argument("amount", type=positive_int, help="chips, at least 1")
        move.add_argument("--reference", required=True,
                          help="the payment's reference, unique in the account (1..64 letters, digits, '_', '-')")
        _common(move, _deposit if name == "deposit" else _withdraw, _print_balance)
    balance = actions.add_parser("balance", help="a player's balance and the chips on their way to a table")
    balance.add_argument("player")
    _common(balance, _balance, _print_balance)
    movements = actions.add_parser("movements", help="a player's movements, oldest first")
    movements.add_argument("player")
    movements.add_argument("--csv", action="store_true", help="as CSV")
    _common(movements, _movements, _print_movements)


def _common(parser: argparse.ArgumentParser, ask: Ask, show: Show) -> None:
    add_operator_argument(parser)
    parser.set_defaults(run=lambda args: _run(args, ask, show))


def _run(args: argparse.Namespace, ask: Ask, show: Show) -> int:
    reply = asyncio.run(_ask(args, ask))
    if not reply.ok:
        code, message = (reply.error.code, reply.error.message) if reply.error else ("?", "refused")
        print(f"studroom cashier {args.cashier}: {code}: {message}", file=sys.stderr)
        return 1
    show(reply, args)
    return 0


async def _ask(args: argparse.Namespace, ask: Ask) -> CashierReply:
    from ..client.cashier import CashierClient

    async with operator_connection(args.operator, "cashier") as nc:
        return await ask(CashierClient(nc, "operator", args.operator), args)


async def _deposit(client: CashierClient, args: argparse.Namespace) -> CashierReply:
    return await client.deposit(args.player, args.amount, args.reference)


async def _withdraw(client: CashierClient, args: argparse.Namespace) -> CashierReply:
    return await client.withdraw(args.player, args.amount, args.reference)


async def _balance(client: CashierClient, args: argparse.Namespace) -> CashierReply:
    return await client.balance(args.player)


async def _movements(client: CashierClient, args: argparse.Namespace) -> CashierReply:
    """Every movement: asked for page after page."""
    movements: list[Movement] = []
    while True:
        reply: CashierReply = await client.movements(args.player, after=len(movements))
        if not reply.ok or not reply.movements:
            return msgspec.structs.replace(reply, movements=movements) if reply.ok else reply
        movements += reply.movements


def _print_balance(reply: CashierReply, args: argparse.Namespace, out: IO[str] = sys.stdout) -> None:
    if reply.balance is None:        # a retried deposit found done: ask for the balance to see it
        print(f"{args.player}: done", file=out)
        return
    if reply.done_before is not None:
        done = reply.done_before
        kind = type(done.event).__name__.lower()
        print(f"{reply.player}: done before, not again: {kind} {number(done.event.amount)} "   # type: ignore[union-attr]
              f"as {done.event.reference} (account version {done.version})", file=out)   # type: ignore[union-attr]
    print(f"{reply.player}: balance {number(reply.balance)}, on its way to a table {number(reply.reserved or 0)}",
          file=out)


def movement_rows(movements: list[Movement]) -> list[list[object]]:
    """One row per movement: version, time (UTC), kind, amount (signed), balance after, table, detail."""
    rows: list[list[object]] = []
    balance = 0
    for m in movements:
        e = m.event
        change = balance_change(e)
        balance += change
        table = getattr(e, "table_id", "")
        detail = getattr(e, "reference", "") or getattr(e, "reason", "") or (
            f"seat {e.seat}" if hasattr(e, "seat") else "")
        when = datetime.fromtimestamp(e.at_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        rows.append([m.version, when, type(e).__name__, change, balance, table, detail])
    return rows


HEADER = ["version", "time (UTC)", "movement", "change", "balance", "table", "detail"]


def _print_movements(reply: CashierReply, args: argparse.Namespace, out: IO[str] = sys.stdout) -> None:
    rows = movement_rows(reply.movements or [])
    if args.csv:
        writer = csv.writer(out)
        writer.writerow(HEADER)
        writer.writerows(rows)
        return
    print(table(HEADER, rows), file=out)
    print(f"{args.player}: {len(rows)} movements", file=out)
