"""The commands' one table and one number format (services/runtime/text.py): plain and
the same on every machine when the output is not a terminal."""

from __future__ import annotations

import io
import re
import time

from rich.console import Console
from studroom.services.runtime.text import (
    figures,
    ms,
    number,
    progress,
    rate,
    signed,
    table,
)


def test_numbers_are_written_one_way() -> None:
    assert (number(12_345), signed(1_200), signed(-50), signed(0)) == ("12,345", "+1,200", "-50", "0")
    assert (ms(3.25), ms(1234.56), rate(1233.7)) == ("3.2", "1,234.6", "1,234/s")


def test_a_table_puts_numbers_right_names_left_and_nothing_for_none() -> None:
    lines = table(["player", "chips", "ms", "net"], [["ann", 12_345, 3.0, "+5"], ["bob", 7, None, "-1,200"]],
                  right=("net",)).splitlines()
    assert lines == ["player    chips    ms      net",
                     "──────────────────────────────",
                     "ann      12,345   3.0       +5",
                     "bob           7         -1,200"]


def test_text_is_text_not_markup_and_no_row_wraps() -> None:
    long = "x" * 400
    lines = table(["who", "note"], [["[bold]ann[/bold]", ":smile:"], ["bob", long]]).splitlines()
    assert lines[2].split() == ["[bold]ann[/bold]", ":smile:"] and lines[3].endswith(long)
    assert "\x1b" not in "".join(lines)


def test_a_benchmark_s_figures_in_ms_keep_one_decimal_and_the_others_are_integers() -> None:
    rows = figures({"events": 40_000, "rebuild: events/s": 12_345.6, "lag p99 ms": 12.34}).splitlines()[2:]
    assert [row.split()[-1] for row in rows] == ["40,000", "12,346", "12.3"]


def test_progress_is_drawn_on_a_terminal_with_the_count_the_rate_and_the_time_left() -> None:
    out = io.StringIO()
    with progress(None, "events", console=Console(file=out, force_terminal=True, width=100)) as advance:
        advance(0, 2_000)                           # the total, once known
        for _ in range(4):
            advance(500)
            time.sleep(0.05)
    drawn = out.getvalue()
    assert "2,000/2,000 events" in drawn and re.search(r"[\d,]+/s", drawn) and "0:00:0" in drawn


def test_progress_draws_nothing_where_no_one_watches() -> None:
    out = io.StringIO()
    with progress(10, "hands", console=Console(file=out)) as advance:     # a file: not a terminal
        advance(10)
    assert out.getvalue() == ""
