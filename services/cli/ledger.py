"""``studroom ledger ...``: the accountant's commands.

    studroom ledger reconcile [--hand T#H | --table T | --player P | --from DAY --to DAY] [--csv]
    studroom ledger rake [--by table|day] [--csv]
    studroom ledger statement PLAYER [--csv]
    studroom ledger rebuild

Each takes a cut of the stores (projections/ledger/cut.py), books up to it (safe
beside running ledger services), then reads as of the cut.  They attach to the room's
database as runtime/servers/attach.py finds it: ``STUDROOM_DATABASE_URL``, the running
room's embedded PostgreSQL in the data folder, or, for a stopped room, one started
there.
``reconcile`` exits 1 when it finds a difference, every command 2 on a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from studroom.projections.ledger.schema import LEDGER_SCHEMA

from ..runtime.arguments import add_period, day, positive_int
from ..runtime.text import number, progress, rate


def add_commands(commands: argparse._SubParsersAction) -> None:
    group = commands.add_parser("ledger", help="the books: reconciliation, rake, players' statements")
    actions = group.add_subparsers(dest="ledger", required=True)
    reconcile = actions.add_parser("reconcile", help="prove the books against the stores and the domain's results")
    reconcile.add_argument("--hand", metavar="TABLE#HAND", help="one hand, e.g. t03#17")
    reconcile.add_argument("--table", help="one table")
    reconcile.add_argument("--player", help="one player's accounts and hands")
    add_period(reconcile)
    _common(reconcile, _reconcile)
    rake = actions.add_parser("rake", help="the rake per table or per day")
    rake.add_argument("--by", choices=("table", "day"), default="table")
    _common(rake, _rake)
    statement = actions.add_parser("statement", help="every movement of a player's chips")
    statement.add_argument("player")
    _common(statement, _statement)
    close = actions.add_parser("close", help="seal a day's books; a day closed before: compare with its seal")
    close.add_argument("day", type=day, metavar="DAY", help="the day (YYYY-MM-DD, UTC), over")
    close.add_argument("--format", choices=("text", "csv", "json"), default="text", help="the report (default text)")
    _common(close, _close, csv=False)
    rebuild = actions.add_parser("rebuild", help="drop the books and book every stored event again")
    _common(rebuild, _rebuild, csv=False)


def _common(parser: argparse.ArgumentParser, run: Any, *, csv: bool = True) -> None:
    if csv:
        parser.add_argument("--csv", action="store_true", help="as CSV")
    parser.add_argument("--stores", type=positive_int, default=None,
                        help="the table stores studroom_p0 .. studroom_p{N-1} (default: every one found)")
    parser.add_argument("--schema", action="append", default=None, help="a table store's schema (repeatable)")
    parser.add_argument("--cashier-schema", default=None, help="the cashier's store (default studroom_cashier)")
    parser.add_argument("--ledger-schema", default=LEDGER_SCHEMA, help=f"the books (default {LEDGER_SCHEMA})")
    parser.add_argument("--data-dir", default=None, help="the room's data (default .studroom/ or STUDROOM_DATA_DIR)")
    parser.set_defaults(run=run)


class _Books(NamedTuple):
    """The books brought up to a cut, and where to read them."""

    url: str
    conn: Any
    sources: list[Any]
    cut: dict[str, int]
    booked: int                 # events booked to bring the books to the cut


@contextlib.contextmanager
def _books(args: argparse.Namespace, *, rebuild: bool = False) -> Iterator[_Books]:
    """The books booked (or rebuilt) up to a cut of the stores taken now."""
    import dataclasses

    import psycopg
    from studroom.projections.ledger import schema
    from studroom.projections.ledger.cut import book_to_cut
    from studroom.projections.ledger.sources import all_sources

    from ..runtime.servers.attach import database
    from ..runtime.settings import Settings

    settings = Settings.from_env()
    if args.data_dir:
        settings = dataclasses.replace(settings, data_dir=Path(args.data_dir).expanduser().absolute())
    with database(settings) as url, psycopg.connect(url, autocommit=True) as conn:
        sources = all_sources(conn, schemas=args.schema, stores=args.stores, cashier_schema=args.cashier_schema)
        if rebuild:
            schema.drop(conn, args.ledger_schema)
        with progress(None, "events booked") as advance:
            cut, booked = book_to_cut(url, sources, ledger_schema=args.ledger_schema, on_progress=advance)
        if booked and not rebuild:          # a rebuild says it in its result
            print(f"booked {booked:,} events new to the books", file=sys.stderr)
        yield _Books(url, conn, sources, cut, booked)


def _reconcile(args: argparse.Namespace) -> int:
    from studroom.projections.ledger.closing import closed_days_differences
    from studroom.projections.ledger.reconcile import reconcile
    from studroom.projections.ledger.reconcile_text import render_reconciliation

    chosen = [name for name in ("hand", "table", "player") if getattr(args, name)]
    if len(chosen) + bool(args.first or args.last) > 1:
        print("studroom ledger reconcile: give one of --hand, --table, --player, --from/--to", file=sys.stderr)
        return 2
    try:
        scope = _scope(args)
    except ValueError as e:
        print(f"studroom ledger reconcile: {e}", file=sys.stderr)
        return 2
    with _books(args) as books:
        result = reconcile(books.url, books.sources, ledger_schema=args.ledger_schema, scope=scope, cut=books.cut)
        if args.first or args.last:
            result.differences += closed_days_differences(books.conn, books.url, books.sources, args.ledger_schema,
                                                          books.cut, args.first, args.last)
    print(render_reconciliation(result, books.sources, args.ledger_schema, as_csv=args.csv))
    return 0 if result.clean else 1


def _scope(args: argparse.Namespace) -> Any:
    from studroom.projections.ledger.reconcile import Scope

    if args.hand:
        table, _, number = args.hand.rpartition("#")
        if not table or not number.isdecimal():
            raise ValueError(f"--hand is TABLE#HAND (e.g. t03#17), not {args.hand!r}")
        return Scope(table=table, hand=int(number))
    if args.first or args.last:
        return Scope.days(*(None if day is None else day.isoformat() for day in (args.first, args.last)))
    return Scope(table=args.table, player=args.player)


def _rake(args: argparse.Namespace) -> int:
    from studroom.projections.ledger.reports import rake
    from studroom.projections.ledger.text import render

    with _books(args) as books:
        header, rows = rake(books.conn, args.by, args.ledger_schema, books.cut)
    print(render(header, rows, as_csv=args.csv))
    return 0


def _statement(args: argparse.Namespace) -> int:
    from studroom.projections.ledger.reports import statement
    from studroom.projections.ledger.text import render

    with _books(args) as books:
        header, rows, totals = statement(books.conn, args.player, args.ledger_schema, books.cut)
    print(render(header, rows, as_csv=args.csv))
    if not args.csv:
        print("\n" + "; ".join(f"{name} {value:,}" for name, value in totals.items()))
    return 0


def _close(args: argparse.Namespace) -> int:
    """Seal the day (exit 0), or compare a closed day with its seal (exit 1 on a change)."""
    from studroom.projections.ledger.closing import DayNotOver, close_day
    from studroom.projections.ledger.seal_text import render_seal

    with _books(args) as books:
        try:
            seal, changed = close_day(books.conn, books.url, books.sources, args.ledger_schema, args.day, books.cut,
                                      int(time.time() * 1000))
        except DayNotOver as e:
            print(f"studroom ledger close: {e}", file=sys.stderr)
            return 2
    print(render_seal(seal, args.format))
    if changed is None:
        print(f"{args.day} closed: its seal is stored in {args.ledger_schema}_seals", file=sys.stderr)
        return 0
    for d in changed:
        print(f"changed since closed: {d.event}: {d.what}" if d.event else d.what, file=sys.stderr)
    print(f"{args.day} was closed before: " + (f"{len(changed)} changes since" if changed else "the books agree "
                                                "with its seal"), file=sys.stderr)
    return 1 if changed else 0


def _rebuild(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    with _books(args, rebuild=True) as books:
        seconds = time.perf_counter() - started
        print(f"the books in {args.ledger_schema} were rebuilt from zero: {number(books.booked)} events booked "
              f"in {seconds:.1f} s ({rate(books.booked / seconds)})")
    return 0
