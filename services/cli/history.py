"""``studroom history ...``: players' histories and hand-history exports at a terminal.

    studroom history hands PLAYER [--table T] [--limit N]     his latest hands, with results
    studroom history sessions PLAYER                          his sittings, totals per game and stakes
    studroom history export TABLE HAND --format phh|text [--lang en|de] [--as PLAYER]
    studroom history rebuild                                  drop the histories, project them again

They read the room's database (services/disputes/stored_events.py: a running room or a
stopped room's data folder).  ``hands`` and ``sessions`` first bring the projection up
to date (what ``serve history`` does, exactly once, so it is safe beside a running
one).  ``export`` reads the event store itself: without ``--as`` the dealer's full
record (every card: for the room's own use), with it the hand as that player may see
it (R23).  Exit codes: 0, 1 nothing found, 2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime

from ..runtime.arguments import positive_int
from ..runtime.settings import Settings
from ..runtime.text import number, progress, rate, signed, table

HANDS = ("played (UTC)", "table", "hand", "game", "stakes", "seat", "net", "won", "pots", "rake", "showdown")
SESSIONS = ("from (UTC)", "to", "table", "game", "stakes", "hands", "net", "rake")
TOTALS = ("game", "stakes", "sessions", "hands", "net", "rake paid")


def add_commands(commands: argparse._SubParsersAction) -> None:
    group = commands.add_parser("history", help="players' hand histories and exports (PHH, text)")
    actions = group.add_subparsers(dest="history", required=True)
    hands = actions.add_parser("hands", help="a player's latest hands with their results")
    hands.add_argument("player")
    hands.add_argument("--table", default=None, help="only at this table")
    hands.add_argument("--limit", type=positive_int, default=50, help="at most this many (default 50)")
    hands.set_defaults(run=_hands)
    sessions = actions.add_parser("sessions", help="a player's sessions and totals per game and stakes")
    sessions.add_argument("player")
    sessions.set_defaults(run=_sessions)
    export = actions.add_parser("export", help="one hand as PHH (phh-std TOML) or as a text hand history")
    export.add_argument("table")
    export.add_argument("hand", type=positive_int, help="the hand number at that table (from 1)")
    export.add_argument("--format", choices=("phh", "text"), default="text")
    export.add_argument("--lang", choices=("en", "de"), default="en", help="the text's language (default en)")
    export.add_argument("--as", dest="player", default=None, help="as this player may see it (R23)")
    export.set_defaults(run=_export)
    rebuild = actions.add_parser("rebuild", help="drop the histories and project every store again")
    rebuild.set_defaults(run=_rebuild)


def _day(ms: int | None) -> str:
    return "?" if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")


def _caught_up(url: str) -> None:
    from studroom.projections.history.projector import Projector

    projector = Projector(url)
    try:
        projector.catch_up()
    finally:
        projector.close()


def _hands(args: argparse.Namespace) -> int:
    import psycopg
    from studroom.projections.history import queries

    from ..runtime.servers.attach import database

    with database(Settings.from_env()) as url:
        _caught_up(url)
        with psycopg.connect(url) as conn:
            found = queries.hands(conn, args.player, table_id=args.table, limit=args.limit)
            sessions, _ = queries.sessions(conn, args.player)
    if not found:
        print(f"studroom history: no hands of {args.player}", file=sys.stderr)
        return 1
    rows = [[_day(h.played_ms), h.table_id, h.hand_no, h.game, f"{h.small_bet}/{h.big_bet}", h.seat, signed(h.net),
             h.won, h.pots_won, h.rake_paid, h.showdown] for h in found]
    print(table(HANDS, rows, right=("stakes", "net")))
    stored = sum(s.hands for s in sessions if args.table in (None, s.table_id))
    if len(found) < stored:
        print(_cut(len(found), stored, queries.MOST_HANDS), file=sys.stderr)
    return 0


def _cut(shown: int, stored: int, most: int) -> str:
    """The note under a list of hands that does not hold them all (on stderr: the table
    stays the same for a script)."""
    more = f"--limit {min(stored, most)} shows more" if shown < most else f"at most {most}: --table narrows"
    return f"studroom history: the latest {number(shown)} of {number(stored)} hands ({more})"


def _sessions(args: argparse.Namespace) -> int:
    import psycopg
    from studroom.projections.history import queries

    from ..runtime.servers.attach import database

    with database(Settings.from_env()) as url:
        _caught_up(url)
        with psycopg.connect(url) as conn:
            found, totals = queries.sessions(conn, args.player)
    if not found:
        print(f"studroom history: no sessions of {args.player}", file=sys.stderr)
        return 1
    rows = [[_day(s.first_ms), _day(s.last_ms), s.table_id, s.game, f"{s.small_bet}/{s.big_bet}", s.hands,
             signed(s.net), s.rake_paid] for s in found]
    print(table(SESSIONS, rows, right=("stakes", "net")))
    rows = [[t.game, f"{t.small_bet}/{t.big_bet}", t.sessions, t.hands, signed(t.net), t.rake_paid] for t in totals]
    print()
    print(table(TOTALS, rows, right=("stakes", "net"), title="totals per game and stakes:"))
    return 0


def _export(args: argparse.Namespace) -> int:
    from studroom.domain.hand_record import NotInHand, record_from_stream
    from studroom.domain.hands import NoSuchHand, find
    from studroom.projections.history import phh, text

    from ..disputes.stored_events import NoSuchTable, table_stream
    from ..runtime.servers.attach import database

    with database(Settings.from_env()) as url:
        try:
            stream = table_stream(url, args.table)
            span = find(stream, args.hand)
            if span.end is None:
                raise NoSuchHand(f"hand {args.hand} at {args.table} is still being played")
            record = record_from_stream(stream, span, args.player)
            sys.stdout.write(phh.render(record) if args.format == "phh" else text.render(record, args.lang))
        except (NoSuchTable, NoSuchHand, NotInHand, phh.NotExportable) as e:
            print(f"studroom history export: {e}", file=sys.stderr)
            return 2
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    import psycopg
    from studroom.projections.history.projector import Projector
    from studroom.projections.history.schema import drop

    from ..runtime.servers.attach import database

    started = time.perf_counter()
    with database(Settings.from_env()) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            drop(conn)
        projector = Projector(url)
        try:
            with progress(None, "events projected") as advance:
                events = projector.catch_up(advance)
        finally:
            projector.close()
    seconds = time.perf_counter() - started
    print(f"history rebuilt: {number(events)} events projected in {seconds:.1f} s ({rate(events / seconds)})")
    return 0
