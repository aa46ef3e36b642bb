"""``studroom replay TABLE HAND [--as PLAYER]`` and ``studroom verify [--from D --to D]``:
the dispute desk's tools, on the event stores alone (records.py: a running room or a
stopped room's data folder).

Exit codes: 0 consistent, 1 a difference (the record and the rules part somewhere),
2 a usage error (no such table or hand, a bad date).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..runtime.arguments import add_period, first_ms, last_ms, positive_int
from ..runtime.settings import Settings
from ..runtime.text import number, progress, rate


def add_commands(commands: argparse._SubParsersAction) -> None:
    replay = commands.add_parser(
        "replay", help="rebuild a hand from the event store, check its deck, re-run every command, print the timeline")
    replay.add_argument("table", help="the table id, e.g. t01")
    replay.add_argument("hand", type=positive_int, help="the hand number at that table (from 1)")
    replay.add_argument("--as", dest="player", default=None, help="as this player may see it (R23)")
    replay.set_defaults(run=_replay)
    verify = commands.add_parser("verify", help="every finished hand of a period replays consistently (exit 1 if not)")
    add_period(verify, instants=True)
    verify.add_argument("--table", default=None, help="only this table")
    verify.add_argument("--all", action="store_true",
                        help="check every hand again, not only those stored since the tables' verified-through marks")
    verify.add_argument("--workers", type=positive_int, default=_cores(),
                        help=f"worker processes, a table at a time (default: the cores, {_cores()})")
    verify.set_defaults(run=_verify)


def _replay(args: argparse.Namespace) -> int:
    from studroom.domain.hands import NoSuchHand, find

    from ..disputes.checks import check_hand
    from ..disputes.stored_events import NoSuchTable, table_stream
    from ..disputes.timeline import render
    from ..runtime.servers.attach import database

    with database(Settings.from_env()) as url:
        try:
            stream = table_stream(url, args.table)
            span = find(stream, args.hand)
        except (NoSuchTable, NoSuchHand) as e:
            print(f"studroom replay: {e}", file=sys.stderr)
            return 2
    if span.end is None:
        print(f"studroom replay: hand {args.hand} at {args.table} is still being played", file=sys.stderr)
        return 2
    check = check_hand(stream, span)
    sys.stdout.write(render(check, stream, args.player))
    return 0 if check.consistent else 1


def _verify(args: argparse.Namespace) -> int:
    import psycopg

    from ..disputes.marks import read_marks, save_marks
    from ..disputes.stored_events import NoSuchTable
    from ..disputes.stored_verify import jobs, verify_stored
    from ..disputes.verify import Period, summarize
    from ..runtime.servers.attach import database

    period = Period(None if args.first is None else first_ms(args.first),
                    None if args.last is None else last_ms(args.last))
    started = time.perf_counter()
    with database(Settings.from_env()) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            try:
                work = jobs(conn, args.table)
            except NoSuchTable as e:
                print(f"studroom verify: {e}", file=sys.stderr)
                return 2
            marks = {} if args.all or period != Period() else read_marks(conn)
        with progress(sum(job.events for job in work), "events") as advance:
            summary = summarize(verify_stored(url, work, period, marks, workers=args.workers, on_progress=advance))
        with psycopg.connect(url, autocommit=True) as conn:
            save_marks(conn, summary.marks)
    for check in summary.different:
        d = check.difference
        findings = [] if check.deck is None else check.deck.findings
        where = f"at version {d.index + 1}: {d.why}" if d is not None else f"deck (R32): {'; '.join(findings)}"
        print(f"{check.table_id} hand {check.span.hand_no}: DIFFERENT {where}")
    consistent = summary.hands - len(summary.different)
    seconds = time.perf_counter() - started
    skipped = f"; {number(summary.skipped)} verified before, skipped (--all checks them)" if summary.skipped else ""
    print(f"verify: {summary.tables} tables, {number(summary.hands)} finished hands ({summary.cancelled} cancelled): "
          f"{number(consistent)} consistent, {len(summary.different)} different "
          f"in {seconds:.1f} s ({rate(summary.hands / seconds)}){skipped}")
    return 1 if summary.different else 0


def _cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))
