"""The reports' tables, for a terminal (aligned text) or a spreadsheet (CSV)."""

from __future__ import annotations

import csv
import datetime
import io
from collections.abc import Sequence


def cell(value: object) -> str:
    """A figure as a person reads it: thousands separated; None as nothing."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def render(header: Sequence[str], rows: Sequence[Sequence[object]], *, as_csv: bool = False) -> str:
    """``rows`` under ``header``: aligned text (numbers to the right), or CSV."""
    if as_csv:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
        return out.getvalue().rstrip("\n")
    cells = [[cell(v) for v in row] for row in rows]
    numeric = [all(isinstance(row[i], int) or row[i] is None for row in rows) and bool(rows)
               for i in range(len(header))]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(header)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(row) for row in cells)])


def day(at_ms: int | None) -> str:
    """The UTC day of a time in ms since the epoch (YYYY-MM-DD), '' when unknown."""
    if at_ms is None:
        return ""
    return datetime.datetime.fromtimestamp(at_ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%d")


def moment(at_ms: int | None) -> str:
    """A time in ms since the epoch as UTC date and time, '' when unknown."""
    if at_ms is None:
        return ""
    return datetime.datetime.fromtimestamp(at_ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
