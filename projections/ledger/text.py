"""The reports' tables, for a terminal (aligned text) or a spreadsheet (CSV)."""

from __future__ import annotations

import csv
import datetime
import io
from collections.abc import Sequence

from studroom.services.runtime.text import table


def render(header: Sequence[str], rows: Sequence[Sequence[object]], *, as_csv: bool = False) -> str:
    """``rows`` under ``header``: the commands' text table (numbers to the right), or CSV."""
    if not as_csv:
        return table(header, rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return out.getvalue().rstrip("\n")


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
