"""How every command draws text for a person: one table (``rich``) and one way to write
numbers.  CSV stays CSV (its callers write it with the csv module).

Numbers, everywhere: counts and chips as integers with a comma between thousands
(``12,345``; a signed net ``+1,200``), milliseconds with one decimal (``3.4``), rates
as integers per second (``1,234/s``).  A column whose every value is a number is
aligned to the right.

On a terminal a table is as wide as the terminal and its header bold; anywhere else
(a pipe, a file, a test) it has no colour and a fixed width wide enough that no row
is wrapped, so the text is the same on every machine.

A long command's progress (:func:`progress`) is drawn on stderr, and only on a terminal.
"""

from __future__ import annotations

import contextlib
import io
import math
import shutil
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import IO, Protocol

from rich import box
from rich.console import Console, RenderableType
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

NOT_A_TERMINAL_WIDTH = 10_000   # not a terminal: no row wraps (a table is only as wide as it needs)


def number(value: int) -> str:
    """A count or chips: ``12,345``."""
    return f"{value:,}"


def signed(value: int) -> str:
    """A gain or a loss: ``+1,200``, ``-50``, ``0``."""
    return f"{value:+,}" if value else "0"


def ms(value: float) -> str:
    """Milliseconds with one decimal: ``3.4``."""
    return f"{value:,.1f}"


def rate(per_second: float) -> str:
    """A rate as an integer per second: ``1,234/s``."""
    return f"{round(per_second):,}/s"


def cell(value: object) -> str:
    """A table's cell: integers as :func:`number`, other numbers as :func:`ms` would
    (one decimal), None as nothing, anything else as it prints."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, int):
        return number(value)
    if isinstance(value, float):
        return ms(value)
    return str(value)


def table(header: Sequence[str], rows: Sequence[Sequence[object]], *, right: Collection[str] = (),
          title: str | None = None) -> str:
    """``rows`` under ``header``, a rule below the header, numbers to the right (and the
    columns named in ``right``: figures already written as text, ``+1,200``, ``20/40``)."""
    numeric = [name in right or (bool(rows) and all(_is_number(row[i]) for row in rows))
               for i, name in enumerate(header)]
    drawn = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title_justify="left")
    for name, right in zip(header, numeric, strict=True):
        drawn.add_column(name, justify="right" if right else "left")
    for row in rows:
        drawn.add_row(*(cell(value) for value in row))
    return draw(drawn)


def figures(measured: Mapping[str, float]) -> str:
    """Named measurements (a benchmark's), a row each: those whose name ends in ``ms``
    with one decimal, the others (counts, rates) as integers."""
    rows = [[name, float(value) if name.endswith("ms") else _integer(value)] for name, value in measured.items()]
    return table(["measured", ""], rows)


def draw(renderable: RenderableType) -> str:
    """What ``renderable`` looks like on this output (see the module docstring), each
    line without trailing spaces."""
    out = io.StringIO()
    console_for_output(out).print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


def console_for_output(file: IO[str] | None = None) -> Console:
    """A console writing to ``file`` (stdout by default) as stdout is: a terminal's width
    and colours, else plain and wide."""
    tty = sys.stdout.isatty()
    return Console(file=file, width=shutil.get_terminal_size().columns if tty else NOT_A_TERMINAL_WIDTH,
                   force_terminal=tty, no_color=not tty, highlight=False, markup=False, emoji=False)


class Advance(Protocol):
    """Told how many more are done and, if it is known now, the total."""

    def __call__(self, done: int, total: int | None = None) -> None: ...


@contextlib.contextmanager
def progress(total: int | None, what: str, *, console: Console | None = None) -> Iterator[Advance]:
    """A progress bar on stderr while a long loop runs (the loop is handed the yielded
    :data:`Advance`): ``what`` done of ``total`` (None: not known), the rate and the
    time left.  It is gone when the loop ends (the command then says its one-line
    result), and nothing is drawn when the console is not a terminal (a pipe, a log)."""
    console = console or Console(file=sys.stderr)
    if not console.is_terminal:
        yield _unseen
        return
    with Progress(BarColumn(), _Done(what), _Rate(), TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task(what, total=total)

        def advance(done: int, total: int | None = None) -> None:
            bar.update(task, advance=done, total=total)
        yield advance


def _unseen(done: int, total: int | None = None) -> None:
    """Progress nobody sees."""


class _Done(ProgressColumn):
    """``1,234/5,678 hands`` (``1,234 hands`` with no total)."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def render(self, task: Task) -> Text:
        of = "" if task.total is None else f"/{number(int(task.total))}"
        return Text(f"{number(int(task.completed))}{of} {self.what}")


class _Rate(ProgressColumn):
    """``812/s`` once rich has measured it."""

    def render(self, task: Task) -> Text:
        return Text("" if task.speed is None else rate(task.speed))


def _integer(value: float) -> int | float:
    return round(value) if math.isfinite(value) else value      # nan, inf: as they are


def _is_number(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))
