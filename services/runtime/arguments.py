"""Checked command-line values: argparse ``type=`` functions, and the parser whose
errors are one line (docs/design/cli.md).

A bad value is refused while the command line is parsed: ``studroom room: argument
--tables: expected an integer of at least 1, got '0' (--help shows the options)`` on
stderr and exit code 2, before anything starts.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, NoReturn, TypeVar

from studroom.domain.names import NAME_RULE, is_name

Number = TypeVar("Number", int, float)

USAGE_ERROR = 2
MAX_REPLICAS = 5          # JetStream keeps at most 5 replicas of a stream or bucket

Check = Callable[[argparse.Namespace], str | None]
"""A check of flags together (a period's ends): what is wrong with them, or None."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit 2); its
    sub-commands' parsers are of this class too (argparse makes them of the parent's).
    A parser may hold checks of several flags together, run once they are parsed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checks: list[Check] = []

    def parse_known_args(self, args: Sequence[str] | None = None,     # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        for check in self.checks:
            if (problem := check(parsed)) is not None:
                self.error(problem)
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: {message} (--help shows the options)\n")


def int_range(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """Integers from ``low`` to ``high``, both included (None: no bound)."""
    return _numbers(int, "an integer", low, high)


def float_range(low: float | None = None, high: float | None = None, *,
                above: float | None = None) -> Callable[[str], float]:
    """Finite numbers from ``low`` (or strictly ``above``) to ``high``."""
    return _numbers(float, "a number", low, high, above)


def _numbers(kind: Callable[[str], Number], what: str, low: float | None, high: float | None,
             above: float | None = None) -> Callable[[str], Number]:
    if low is not None and high is not None:
        bounds = f" from {low:g} to {high:g}"
    else:
        bounds = "".join(f" {word} {bound:g}" for word, bound in
                         (("of at least", low), ("above", above), ("of at most", high)) if bound is not None)
    expected = f"expected {what}{bounds}"

    def parse(text: str) -> Number:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{expected}, got {text!r}") from None
        if (not math.isfinite(value) or (low is not None and value < low)
                or (above is not None and value <= above) or (high is not None and value > high)):
            raise argparse.ArgumentTypeError(f"{expected}, got {text!r}")
        return value

    return parse


positive_int = int_range(1)
non_negative_int = int_range(0)
positive_float = float_range(above=0)
non_negative_float = float_range(0)


def name(text: str) -> str:
    """A name of the room (an instance, a player): letters, digits, '_' or '-'."""
    if not is_name(text):
        raise argparse.ArgumentTypeError(f"{NAME_RULE}, got {text!r}")
    return text


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
Moment = date | datetime
"""A day (all of it) or an instant (an aware datetime)."""


def day(text: str) -> date:
    """A day, ``YYYY-MM-DD`` (a real one: no 2026-02-30)."""
    try:
        if _DAY.fullmatch(text):
            return date.fromisoformat(text)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text} is not a day (YYYY-MM-DD)")


def day_or_instant(text: str) -> Moment:
    """A day (:func:`day`) or an ISO date and time, UTC unless it says otherwise."""
    if len(text) == len("YYYY-MM-DD"):
        return day(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text} is not a day (YYYY-MM-DD) or an ISO date and time") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def first_ms(moment: Moment) -> int:
    """Where ``moment`` begins, in ms since the epoch (a day: its first millisecond)."""
    return _ms(moment if isinstance(moment, datetime) else datetime.combine(moment, time.min, UTC))


def last_ms(moment: Moment) -> int:
    """Where ``moment`` ends, in ms since the epoch (a day: its last millisecond)."""
    if isinstance(moment, datetime):
        return _ms(moment)
    return first_ms(moment + timedelta(days=1)) - 1


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def add_period(parser: argparse.ArgumentParser, *, instants: bool = False) -> None:
    """``--from`` and ``--to`` (``args.first``, ``args.last``; either may be left open):
    days, both included, or with ``instants`` days or instants.  A period whose end
    comes before its start is a usage error naming both."""
    kind, what = (day_or_instant, "day or instant") if instants else (day, "day")
    meta = "WHEN" if instants else "DAY"
    parser.add_argument("--from", dest="first", type=kind, default=None, metavar=meta,
                        help=f"from this {what} (YYYY-MM-DD, UTC), included")
    parser.add_argument("--to", dest="last", type=kind, default=None, metavar=meta,
                        help=f"to this {what}, included")
    if not isinstance(parser, Parser):
        raise TypeError("a period's ends are checked together by a studroom Parser")
    parser.checks.append(_ordered_period)


def _ordered_period(args: argparse.Namespace) -> str | None:
    if args.first is None or args.last is None or first_ms(args.first) <= last_ms(args.last):
        return None
    return f"--from {args.first.isoformat()} is after --to {args.last.isoformat()}: no time between them"


def one_line(error: BaseException) -> str:
    """An error as one line: its type and the first line of its message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
