"""The room's progress line: hands, actions and their rate, tables, bots, errors,
services started again and services that are down; rewritten in place on a terminal
(fixed widths, so the figures do not move as they grow)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import IO

from ..runtime.text import number
from ..runtime.text import rate as per_second

RATE_WINDOW = 5.0        # seconds the rate of actions is measured over
LINE_EVERY = 5.0         # seconds between lines when the output is not a terminal


class ActionRate:
    """Actions per second over the last ``window`` seconds, from samples of a count."""

    def __init__(self, now: float, count: int, window: float = RATE_WINDOW) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque([(now, count)])

    def add(self, now: float, count: int) -> float:
        """Take a sample; the rate over the window up to it."""
        samples = self._samples
        samples.append((now, count))
        while len(samples) > 2 and now - samples[0][0] > self.window:
            samples.popleft()
        (first_at, first), (last_at, last) = samples[0], samples[-1]
        return (last - first) / max(last_at - first_at, 1e-9)


def status_line(*, hands: int, actions: int, rate: float, tables: int, bots: int,
                errors: int, seconds: float, down: Sequence[str] = (), restarts: int = 0) -> str:
    line = (f"hands {number(hands):>7} | actions {number(actions):>9} ({per_second(rate):>7}) | tables {tables} | "
            f"bots {bots} | errors {number(errors)} | {seconds:5.0f} s")
    if restarts:
        line += f" | restarts {restarts}"
    if down:
        line += " | DOWN: " + ", ".join(down)
    return line


class Progress:
    """One terminal line, rewritten in place (a full line every few seconds when the
    output is not a terminal)."""

    def __init__(self, out: IO[str], enabled: bool = True) -> None:
        self.out = out
        self.enabled = enabled
        self.tty = out.isatty()
        self.last_line_at = 0.0
        self.width = 0

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            pad = max(self.width - len(text), 0)
            self.out.write("\r" + text + " " * pad)
            self.width = len(text)
            self.out.flush()
        elif time.monotonic() - self.last_line_at >= LINE_EVERY:
            self.last_line_at = time.monotonic()
            self.out.write(text + "\n")
            self.out.flush()

    def done(self) -> None:
        if self.enabled and self.tty and self.width:
            self.out.write("\n")
            self.out.flush()
            self.width = 0
