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


def _schema(args: argparse.Namespace) -> int:
    from pathlib import Path

    from studroom.services import schema

    for path in schema.write(Path(args.dir) if args.dir else schema.DEFAULT_DIR):
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="studroom", description="Studroom: an online stud poker room.")
    commands = parser.add_subparsers(dest="command", required=True)

    hand = commands.add_parser("hand", help="scripted hands (SCENARIO.md)").add_subparsers(dest="hand", required=True)
    hand_play = hand.add_parser("play", help="play one scripted hand and print its outcome as JSON")
    hand_play.add_argument("file", help="scenario JSON file, or - for stdin")
    hand_play.add_argument("--compact", action="store_true", help="one line of JSON")
    hand_play.set_defaults(run=_hand_play)

    schema = commands.add_parser("schema", help="write the JSON Schemas of events, commands, replies")
    schema.add_argument("dir", nargs="?", help="output folder (default: docs/schema)")
    schema.set_defaults(run=_schema)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
