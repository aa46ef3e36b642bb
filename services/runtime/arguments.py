"""Checked command-line values: argparse ``type=`` functions, and the parser whose
errors are one line (docs/design/cli.md).

A bad value is refused while the command line is parsed: ``studroom room: argument
--tables: expected an integer of at least 1, got '0' (--help shows the options)`` on
stderr and exit code 2, before anything starts.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import NoReturn, TypeVar

from studroom.domain.names import NAME_RULE, is_name

Number = TypeVar("Number", int, float)

USAGE_ERROR = 2
MAX_REPLICAS = 5          # JetStream keeps at most 5 replicas of a stream or bucket


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit 2); its
    sub-commands' parsers are of this class too (argparse makes them of the parent's)."""

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


def one_line(error: BaseException) -> str:
    """An error as one line: its type and the first line of its message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
