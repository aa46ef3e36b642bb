"""``bench room``'s progress on stderr: on a terminal one rich line per row, rewritten
in place (its phase, a bar over the phase's seconds, actions and their rate while
playing), gone when the row ends; elsewhere a line at each phase."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from studroom.services.runtime.text import number, rate

TICK = 0.5              # seconds between two redraws


class RowProgress:
    def __init__(self, title: str, out: IO[str] = sys.stderr) -> None:
        self.title = title
        self.console = Console(file=sys.stderr)
        self.out = out
        self._bar: Progress | None = None
        self._task = None

    def __enter__(self) -> RowProgress:
        if self.console.is_terminal:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(),
                                 console=self.console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.title, total=None)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    def phase(self, what: str, total: float | None = None, *, step: bool = False) -> None:
        """A new phase of the row (``total``: its seconds, for the bar); ``step``: a step
        within the phase before, drawn on a terminal only (no line for each table)."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=f"{self.title}: {what}", total=total, completed=0)
        elif not step:
            self.console.print(f"{self.title}: {what}", highlight=False, markup=False)

    async def wait(self, what: str, seconds: float, count: Callable[[], int] | None = None) -> None:
        """Sleep ``seconds``, the bar filling; ``count``: actions so far, shown with their rate."""
        self.phase(what, seconds)
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            await asyncio.sleep(min(TICK, seconds - elapsed))
            if self._bar is None or self._task is None:
                continue
            elapsed = time.monotonic() - started
            text = f"{self.title}: {what}"
            if count is not None:
                done = count()
                text += f", {number(done)} actions ({rate(done / max(elapsed, 1e-9))})"
            self._bar.update(self._task, description=text, completed=min(elapsed, seconds))
