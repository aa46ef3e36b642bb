"""The ``studroom`` command line: one program for everything a person runs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable


def _hand_play(args: argparse.Namespace) -> int:
    from studroom.domain.scenario import play

    source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    with source:
        try:
            scenario = json.load(source)
        except json.JSONDecodeError as e:
            out = {"error": {"code": "bad_json", "message": str(e), "action_index": None}}
            print(json.dumps(out))
            return 2
    out = play(scenario)
    print(json.dumps(out, indent=None if args.compact else 2))
    return 2 if "error" in out else 0


def _hand_audit(args: argparse.Namespace) -> int:
    """R32: prove a hand's deck from its events (a JSON list, or a `hand play` output)."""
    import msgspec

    from studroom.domain.audit import audit_hand
    from studroom.domain.events import TableEvent

    source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
    with source:
        data = json.load(source)
    events = msgspec.convert(data["events"] if isinstance(data, dict) else data, list[TableEvent], strict=False)
    audit = audit_hand(events)
    print(json.dumps(msgspec.to_builtins(audit), indent=2))
    return 0 if audit.fair else 1


def _schema(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .wire import schema

    for path in schema.write(Path(args.dir) if args.dir else schema.DEFAULT_DIR):
        print(path)
    return 0


def _subcommands(commands: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:
    """The sub-commands of ``studroom <name>`` (serve, bench): created on first use, so
    that several modules can add theirs."""
    parser = commands.choices.get(name) or commands.add_parser(name, help=help)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest=name, required=True)


def _room(args: argparse.Namespace) -> int:
    from . import room

    return room.cli(args)


def _serve_bot(args: argparse.Namespace) -> int:
    from .players import bot

    return bot.cli(args)


def _bench_room(args: argparse.Namespace) -> int:
    from .bench import room as bench_room

    return bench_room.cli(args)


def _add_room_commands(commands: argparse._SubParsersAction) -> None:
    """``room``, ``serve bot`` and ``bench room``."""
    room = commands.add_parser("room", help="a live room: servers, table services, relay and bots")
    room.add_argument("--tables", type=int, default=4, help="tables to play on (default 4)")
    room.add_argument("--bots-per-table", type=int, default=5, help="bots at each table (default 5)")
    room.add_argument("--for", dest="seconds", type=float, default=None, metavar="SECONDS",
                      help="stop after this long and print a summary (default: until Ctrl-C)")
    room.add_argument("--instances", type=int, default=1, help="table-service processes (default 1)")
    room.add_argument("--stores", type=int, default=1, help="event stores (partitions of tables, default 1)")
    room.add_argument("--pace", type=int, default=0, metavar="MS", help="bots think this long (default 0)")
    room.add_argument("--data-dir", default=None, help="embedded servers' data (default .studroom/ or STUDROOM_DATA_DIR)")
    room.add_argument("--quiet", action="store_true", help="no progress line")
    room.add_argument("--no-timers", action="store_true", help="no timer service (absent players never time out)")
    room.set_defaults(run=_room)

    serve = _subcommands(commands, "serve", "run one service on its own")
    bot = serve.add_parser("bot", help="one bot player at one table")
    bot.add_argument("--table", required=True)
    bot.add_argument("--seat", type=int, required=True)
    bot.add_argument("--player", required=True)
    bot.add_argument("--pace", type=int, default=500, metavar="MS", help="think time (default 500)")
    bot.add_argument("--seed", type=int, default=None, help="random seed of its decisions")
    bot.set_defaults(run=_serve_bot)

    bench = _subcommands(commands, "bench", "benchmarks, beside a baseline measured in the same run")
    bench_room = bench.add_parser("room", help="bots over NATS against 1/2 table services and 1/N stores")
    bench_room.add_argument("--seconds", type=float, default=10.0, help="per configuration (default 10)")
    bench_room.add_argument("--tables", type=int, default=16, help="tables played at once (default 16)")
    bench_room.add_argument("--bots-per-table", type=int, default=4)
    bench_room.add_argument("--stores-n", type=int, default=4, help="N of the 1/N stores rows (default 4)")
    bench_room.set_defaults(run=_bench_room)


def _serve_table(args: argparse.Namespace) -> int:
    from .table import service as table_service

    return table_service.run(args)


def _add_table_commands(commands: argparse._SubParsersAction) -> None:
    """``serve table`` (the options of ``python -m studroom.services.table.service``)."""
    serve = _subcommands(commands, "serve", "run one service on its own")
    table = serve.add_parser("table", help="the table service: commands in, events stored (partition leases)")
    table.add_argument("--instance-id", help="unique among the running instances (default: host-pid)")
    table.add_argument("--stores", type=int, default=1, help="event stores; the same for all instances (default 1)")
    table.add_argument("--partitions", type=int, default=16, help="as in the NATS subject mapping (default 16)")
    table.add_argument("--pause-ms", type=int, default=0, help="pause between hands (default 0)")
    table.add_argument("--lease-ttl", type=float, default=3.0, help="partition lease TTL, seconds (default 3)")
    table.add_argument("--lease-bucket", default="studroom_leases", help=argparse.SUPPRESS)
    table.add_argument("--schema-prefix", default="studroom_p", help=argparse.SUPPRESS)
    table.add_argument("-v", "--verbose", action="store_true", help="log partition changes")
    table.set_defaults(run=_serve_table)


def _serve_timer(args: argparse.Namespace) -> int:
    from .timer import service as timer_service

    return timer_service.cli(args)


def _bench_timer(args: argparse.Namespace) -> int:
    from .bench import timer as bench_timer

    return bench_timer.cli(args)


def _add_timer_commands(commands: argparse._SubParsersAction) -> None:
    """``serve timer`` and ``bench timer`` (as ``python -m studroom.services.timer.service``
    and ``python -m studroom.services.bench.timer``)."""
    serve = _subcommands(commands, "serve", "run one service on its own")
    timer = serve.add_parser("timer", help="the timer service: times out turns at their deadline")
    timer.add_argument("--instance-id", default=None, help="name in logs (default: host-pid)")
    timer.add_argument("--replicas", type=int, default=1,
                       help="replicas of the timer stream and bucket when created (production: 3)")
    timer.add_argument("--stats-every", type=float, default=30.0, metavar="SECONDS",
                       help="log the counters this often (0: never; default 30)")
    timer.add_argument("--log-level", default="INFO")
    timer.set_defaults(run=_serve_timer)

    bench = _subcommands(commands, "bench", "benchmarks, beside a baseline measured in the same run")
    bench_timer = bench.add_parser("timer", help="timeouts/s and lateness with N concurrent deadlines")
    bench_timer.add_argument("--timers", type=int, default=1000, help="concurrent deadlines (default 1000)")
    bench_timer.add_argument("--lead", type=float, default=2.0,
                             help="seconds between scheduling and the first deadline (default 2)")
    bench_timer.set_defaults(run=_bench_timer)


def _serve_relay(args: argparse.Namespace) -> int:
    from .relay import relay

    return relay.run(args)


def _bench_domain(args: argparse.Namespace) -> int:
    from .bench import domain as bench_domain

    bench_domain.run(args.seconds)
    return 0


def _add_relay_and_domain_bench(commands: argparse._SubParsersAction) -> None:
    """``serve relay`` (the options of ``python -m studroom.services.relay.relay``) and
    ``bench domain``."""
    serve = _subcommands(commands, "serve", "run one service on its own")
    relay = serve.add_parser("relay", help="the relay: stored events -> JetStream, public and private views")
    from .relay.relay import add_arguments

    add_arguments(relay)
    relay.set_defaults(run=_serve_relay)
    bench = _subcommands(commands, "bench", "benchmarks, beside a baseline measured in the same run")
    domain = bench.add_parser("domain", help="hands/s of the pure domain beside pokerkit; evaluations/s")
    domain.add_argument("--seconds", type=float, default=2.0, help="per engine and case (default 2)")
    domain.set_defaults(run=_bench_domain)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="studroom", description="Studroom: an online stud poker room.")
    commands = parser.add_subparsers(dest="command", required=True)

    hand = commands.add_parser("hand", help="scripted hands (SCENARIO.md)").add_subparsers(dest="hand", required=True)
    hand_play = hand.add_parser("play", help="play one scripted hand and print its outcome as JSON")
    hand_play.add_argument("file", help="scenario JSON file, or - for stdin")
    hand_play.add_argument("--compact", action="store_true", help="one line of JSON")
    hand_play.set_defaults(run=_hand_play)
    hand_audit = hand.add_parser("audit", help="prove a hand's cards from its revealed seed (R32)")
    hand_audit.add_argument("file", help="the hand's events as JSON, or - for stdin")
    hand_audit.set_defaults(run=_hand_audit)

    schema = commands.add_parser("schema", help="write the JSON Schemas of events, commands, replies")
    schema.add_argument("dir", nargs="?", help="output folder (default: docs/schema)")
    schema.set_defaults(run=_schema)

    _add_room_commands(commands)
    _add_table_commands(commands)
    _add_timer_commands(commands)
    _add_relay_and_domain_bench(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
