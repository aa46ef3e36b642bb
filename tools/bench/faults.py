"""How long does the room take to recover from each fault?  The fault drill
(tools/faults/drill.py) on embedded servers in a throwaway folder: kill -9 of each
service, PostgreSQL and NATS stopped and started, each followed by the time until every
table dealt a new hand and the service answered again, beside the same measure with no
fault (what each row means: docs/design/resilience.md).

    studroom bench faults [--tables N] [--bots-per-table B] [--instances I] [--stores S] [--pace MS]
                          [--pause MS] [--outage S] [--limit S] [--rounds N] [--only FAULT ...]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from studroom.services.runtime.arguments import (
    float_range,
    int_range,
    non_negative_int,
    positive_float,
    positive_int,
)
from studroom.services.runtime.processes import process

from ..faults.drill import Drill, DrillOptions
from ..faults.report import report_table
from .room import MAX_BOTS_PER_TABLE

FAULT_NAMES = ("table", "relay", "timer", "cashier", "lobby", "history", "ledger", "postgres", "nats")
HELP = ("recovery time after kill -9 of each service and a PostgreSQL / NATS restart, "
        "under bot load, beside a baseline with no fault")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = DrillOptions()
    parser.add_argument("--tables", type=positive_int, default=defaults.tables, help="tables (default %(default)s)")
    parser.add_argument("--bots-per-table", type=int_range(2, MAX_BOTS_PER_TABLE), default=defaults.bots_per_table,
                        help="bots at each table (default %(default)s)")
    parser.add_argument("--instances", type=positive_int, default=defaults.instances,
                        help="table-service processes (default %(default)s)")
    parser.add_argument("--stores", type=positive_int, default=defaults.stores, help="event stores (default %(default)s)")
    parser.add_argument("--pace", type=non_negative_int, default=defaults.pace_ms, metavar="MS",
                        help="bots think this long (default %(default)s)")
    parser.add_argument("--pause", type=non_negative_int, default=defaults.pause_ms, metavar="MS",
                        help="pause between hands, ended by the timer service (default %(default)s)")
    parser.add_argument("--outage", type=float_range(0.0), default=defaults.outage, metavar="S",
                        help="seconds a server stays down (default %(default)s)")
    parser.add_argument("--limit", type=positive_float, default=defaults.limit, metavar="S",
                        help="seconds a recovery may take before it counts as failed (default %(default)s)")
    parser.add_argument("--rounds", type=positive_int, default=defaults.rounds,
                        help="inject the faults this many times, one round after another (default %(default)s)")
    parser.add_argument("--only", nargs="+", default=[], metavar="FAULT", choices=FAULT_NAMES,
                        help="only these faults: services (table, relay, ...), postgres, nats")


def run(args: argparse.Namespace) -> int:
    process.configure_logging("ERROR")      # the drill's connections lose NATS on purpose: no line each
    options = DrillOptions(tables=args.tables, bots_per_table=args.bots_per_table, instances=args.instances,
                           stores=args.stores, pace_ms=args.pace,
                           pause_ms=args.pause, outage=args.outage, limit=args.limit,
                           rounds=args.rounds)
    folder = Path(tempfile.mkdtemp(prefix="studroom-bench-faults-"))
    try:
        report = Drill(folder, options, say=lambda text: print(text, flush=True)).run(args.only)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print()
    print(report_table(report))
    sys.stdout.flush()
    return 0 if not report.failures else 1
