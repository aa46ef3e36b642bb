"""The ``studroom`` command line: one program for everything a person runs.

It only wires: each service process is a ``bootstrap`` module run by
:mod:`..runtime.processes.process`, each benchmark a module of ``studroom.tools.bench`` with ``HELP``,
``add_arguments`` and ``run``.  Their options are declared once, there.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import select
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from functools import partial
from types import ModuleType
from typing import Any

from ..runtime.arguments import (
    Parser,
    int_range,
    non_negative_int,
    one_line,
    positive_float,
    positive_int,
)
from ..runtime.observability.logs import mask

# studroom serve <name>: the composition root of each process
SERVICES = {
    "table": "studroom.services.table.bootstrap",
    "relay": "studroom.services.relay.bootstrap",
    "timer": "studroom.services.timer.bootstrap",
    "bot": "studroom.services.players.bootstrap",
    "cashier": "studroom.services.cashier.bootstrap",
    "ledger": "studroom.projections.ledger.bootstrap",
    "lobby": "studroom.projections.lobby.bootstrap",
    "history": "studroom.projections.history.bootstrap",
    "console": "studroom.services.console.bootstrap",
}

# studroom <name> ...: the tools of a part, each module with add_commands(commands)
TOOLS: dict[str, str] = {
    "auth": "studroom.services.cli.auth",
    "cashier": "studroom.services.cli.cashier",
    "ledger": "studroom.services.cli.ledger",
    "lobby": "studroom.services.cli.lobby",
    "history": "studroom.services.cli.history",
    "disputes": "studroom.services.cli.disputes",
    "health": "studroom.services.cli.health",
    "table": "studroom.services.cli.table",
}

# studroom bench <name>
BENCHMARKS = {
    "domain": "studroom.tools.bench.domain",
    "room": "studroom.tools.bench.room",
    "timer": "studroom.tools.bench.timer",
    "table": "studroom.tools.bench.table",
    "store": "studroom.tools.bench.store",
    "lobby": "studroom.tools.bench.lobby",
    "ledger": "studroom.tools.bench.ledger",
    "history": "studroom.tools.bench.history",
    "verify": "studroom.tools.bench.verify",
    "faults": "studroom.tools.bench.faults",
}


class _BadInput(Exception):
    """A file the hand commands cannot read: one line on stderr, exit code 2."""


def _read_json(path: str) -> object:
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as source:
            return json.load(source)
    except OSError as e:
        raise _BadInput(f"cannot read {path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise _BadInput(f"{path} is not JSON: {e}") from None


def _input_errors(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except _BadInput as e:
            print(f"studroom hand {args.hand}: {e}", file=sys.stderr)
            return 2
    return run


def _hand_play(args: argparse.Namespace) -> int:
    from studroom.domain.scenario import play

    out = play(_read_json(args.file))
    print(json.dumps(out, indent=None if args.compact else 2))
    return 2 if "error" in out else 0


def _hand_audit(args: argparse.Namespace) -> int:
    """R32: check every hand of a stream (audit.stream says which files): 1 if any finding."""
    import msgspec
    from studroom.domain.audit import audit, stream

    try:
        audits = audit(stream(_read_json(args.file)))
    except ValueError as e:
        raise _BadInput(f"{args.file} holds no table events: {e}") from None
    if not audits:
        raise _BadInput(f"{args.file} holds no hand (no HandStarted)")
    print(json.dumps(msgspec.to_builtins(audits), indent=2))
    return 0 if all(a.fair for a in audits) else 1


def _schema(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..wire import schema

    for path in schema.write(Path(args.dir) if args.dir else schema.DEFAULT_DIR):
        print(path)
    return 0


def _room(args: argparse.Namespace) -> int:
    from ..room import room

    return room.cli(args)


def _serve(module: ModuleType, args: argparse.Namespace) -> int:
    from ..runtime.processes import process

    return process.run(module, args)  # type: ignore[arg-type]


def _add_hand_commands(commands: argparse._SubParsersAction) -> None:
    hand = commands.add_parser("hand", help="scripted hands (SCENARIO.md)").add_subparsers(dest="hand", required=True)
    play = hand.add_parser("play", help="play one scripted hand and print its outcome as JSON")
    play.add_argument("file", help="scenario JSON file, or - for stdin")
    play.add_argument("--compact", action="store_true", help="one line of JSON")
    play.set_defaults(run=_input_errors(_hand_play))
    audit = hand.add_parser("audit", help="check the deck commitment and every card proof of each hand (R32)")
    audit.add_argument("file", help="a table's events, a `hand play` output or a player's messages as JSON, "
                                    "or - for stdin")
    audit.set_defaults(run=_input_errors(_hand_audit))


def _add_room_command(commands: argparse._SubParsersAction) -> None:
    from ..room.plans import MAX_BOTS_PER_TABLE
    from ..wire.subjects import PARTITIONS

    room = commands.add_parser("room", help="a live room: servers, table services, relay, timer and bots")
    room.add_argument("--tables", type=positive_int, default=4, help="tables to play on (default 4)")
    room.add_argument("--bots-per-table", type=int_range(2, MAX_BOTS_PER_TABLE), default=5,
                      help=f"bots at each table, 2 to {MAX_BOTS_PER_TABLE} (default 5)")
    room.add_argument("--for", dest="seconds", type=positive_float, default=None, metavar="SECONDS",
                      help="play this long, then print a summary; opening the tables may take this long "
                           "at most too (default: until Ctrl-C)")
    room.add_argument("--instances", type=int_range(1, PARTITIONS), default=1,
                      help=f"table-service processes, 1 to {PARTITIONS} (default 1)")
    room.add_argument("--stores", type=int_range(1, PARTITIONS), default=1,
                      help=f"event stores (partitions of tables), 1 to {PARTITIONS} (default 1)")
    room.add_argument("--db-servers", type=int_range(1, PARTITIONS), default=1,
                      help="embedded PostgreSQL servers the stores are spread over: store j on server "
                           "j %% N (default 1; external servers: STUDROOM_STORE_URLS)")
    room.add_argument("--pace", type=non_negative_int, default=0, metavar="MS", help="bots think this long (default 0)")
    room.add_argument("--data-dir", default=None, help="embedded servers' data (default .studroom/ or STUDROOM_DATA_DIR)")
    room.add_argument("--quiet", action="store_true", help="no progress line")
    room.add_argument("--no-timers", action="store_true", help="no timer service (absent players never time out)")
    room.add_argument("--console-port", type=int_range(0, 65535), default=None, metavar="PORT",
                      help="the web console's port on 127.0.0.1 (default 8480 if free, else a free one; 0: a free one)")
    room.add_argument("--no-console", action="store_true", help="no web console")
    room.set_defaults(run=_room)


def _add_serve_commands(commands: argparse._SubParsersAction, only: str | None = None) -> None:
    from ..runtime.processes import process

    serve = commands.add_parser("serve", help="run one service on its own").add_subparsers(dest="service", required=True)
    for name, path in SERVICES.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(path)
        parser = serve.add_parser(name, help=module.HELP, description=module.HELP)
        process.add_arguments(parser, module)  # type: ignore[arg-type]
        parser.set_defaults(run=partial(_serve, module))


def _add_bench_commands(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser("bench", help="benchmarks, beside a baseline measured in the same run")
    kinds = bench.add_subparsers(dest="bench", required=True)
    for name, path in BENCHMARKS.items():
        module = importlib.import_module(path)
        parser = kinds.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(parser)
        parser.set_defaults(run=module.run)


def _add_tools(commands: argparse._SubParsersAction) -> None:
    for path in TOOLS.values():
        importlib.import_module(path).add_commands(commands)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole command tree; for ``serve <service> ...`` only that service's branch
    (a service process starts without importing every other command: restarts are
    quicker)."""
    parser = Parser(prog="studroom", description="Studroom: an online stud poker room.")
    commands = parser.add_subparsers(dest="command", required=True)
    if argv is not None and len(argv) >= 2 and argv[0] == "serve" and argv[1] in SERVICES:
        _add_serve_commands(commands, only=argv[1])
        _add_debug_flags(parser)
        return parser
    _add_hand_commands(commands)
    _add_room_command(commands)
    _add_serve_commands(commands)
    _add_bench_commands(commands)
    _add_tools(commands)
    schema = commands.add_parser("schema", help="write the JSON Schemas of events, commands, replies")
    schema.add_argument("dir", nargs="?", help="output folder (default: docs/schema)")
    schema.set_defaults(run=_schema)
    _add_debug_flags(parser)
    return parser


def _add_debug_flags(parser: argparse.ArgumentParser) -> None:
    for command in _commands(parser):
        command.add_argument("--debug", action="store_true", help="show the traceback of an error")
        command.set_defaults(prog=command.prog)


def _commands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parsers of the commands that run something (the leaves of the tree)."""
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subcommands:
        yield parser
    for action in subcommands:
        for sub in dict.fromkeys(action.choices.values()):     # aliases name a parser twice
            yield from _commands(sub)


CLOSED_PIPE = 128 + 13
"""The exit code of a command whose output's reader went away (``studroom ... | head``):
what a shell's own tools killed by SIGPIPE give, so ``set -o pipefail`` still sees
that the output was cut."""


def main(argv: list[str] | None = None) -> int:
    """Run one command; an error is one line on stderr (``--debug``: its traceback);
    output into a closed pipe ends it quietly (:data:`CLOSED_PIPE`)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()      # now, not at exit, where Python would only complain of a closed pipe
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())    # what is left goes nowhere
        return CLOSED_PIPE


def _reader_gone() -> bool:
    """Whether stdout is a pipe (or socket) whose reading end is closed."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):       # not a file (a test's capture)
        return False
    poller = select.poll()
    poller.register(fd, 0)              # no events asked for: errors and hang-ups are always said
    return any(event & select.POLLERR for _, event in poller.poll(0))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program stands, as Ctrl-C raises KeyboardInterrupt:
    so that its ``finally`` blocks run (a benchmark's child services stopped, its
    embedded servers shut, its temporary folder removed) instead of the process
    vanishing and leaving them behind.  ``serve`` and ``room`` put handlers of their
    own in place once they run."""


def _terminate(_sig: int, _frame: Any) -> None:
    raise Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` while inside (in the main thread only: a
    test may call ``main`` from another); the handler before is put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _die_of_sigterm() -> None:
    """End as a process killed by SIGTERM (what a supervisor expects of one that was
    sent it), now that everything was cleaned up."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _main(argv: list[str]) -> int:
    args = build_parser(argv).parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    # nats-py logs a traceback for every failed (re)connection; process.connect says it once
    logging.getLogger("nats").setLevel(logging.CRITICAL)
    try:
        with _sigterm_raises():
            return run(args)
    except Terminated:
        print(f"\n{args.prog}: terminated", file=sys.stderr)
        _die_of_sigterm()
        raise
    except KeyboardInterrupt:
        print(f"\n{args.prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:      # said masked: a URL or a path in it may carry a password
        if isinstance(error, BrokenPipeError) and _reader_gone():
            raise                       # our output's reader went away: main ends quietly
        if args.debug:
            print(mask("".join(traceback.format_exception(error))), end="", file=sys.stderr)
        else:
            print(f"{args.prog}: {mask(one_line(error))} (--debug shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
