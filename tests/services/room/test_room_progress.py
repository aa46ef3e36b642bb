"""The room's progress line: its rate, its text, and how it is written. No servers."""

from __future__ import annotations

import io

import pytest
from studroom.services.room import progress
from studroom.services.room.progress import ActionRate, Progress, status_line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rate_is_over_the_last_seconds_only() -> None:
    rate = ActionRate(now=100.0, count=0, window=5.0)
    assert rate.add(101.0, 50) == pytest.approx(50.0)
    assert rate.add(102.0, 100) == pytest.approx(50.0)
    for second in range(103, 110):                  # nothing happens for seven seconds
        quiet = rate.add(float(second), 100)
    assert quiet == 0.0                             # the busy start is out of the window


def test_the_line_names_services_that_are_down() -> None:
    line = status_line(hands=12, actions=3_400, rate=56.75, tables=4, bots=20, errors=1,
                       seconds=61.2)
    assert line == ("hands      12 | actions     3,400 (   57/s) | tables 4 | bots 20 | "
                    "errors 1 |    61 s")
    down = status_line(hands=0, actions=0, rate=0.0, tables=1, bots=2, errors=0, seconds=0,
                       down=["room-relay (exit 1)"])
    assert down.endswith(" | DOWN: room-relay (exit 1)")


def test_a_terminal_line_is_rewritten_in_place() -> None:
    out = Terminal()
    shown = Progress(out)
    shown.show("a longer line")
    shown.show("short")
    shown.done()
    assert out.getvalue() == "\ra longer line" + "\rshort" + " " * 8 + "\n"


def test_other_output_gets_a_full_line_now_and_then(monkeypatch: pytest.MonkeyPatch) -> None:
    now = 1000.0
    monkeypatch.setattr(progress.time, "monotonic", lambda: now)
    out = io.StringIO()
    shown = Progress(out)
    for after, text in ((0.0, "first"), (1.0, "too soon"), (progress.LINE_EVERY, "later")):
        now = 1000.0 + after
        shown.show(text)
    shown.done()
    assert out.getvalue() == "first\nlater\n"


def test_quiet_writes_nothing() -> None:
    out = Terminal()
    shown = Progress(out, enabled=False)
    shown.show("anything")
    shown.done()
    assert out.getvalue() == ""


def test_the_line_counts_the_services_started_again() -> None:
    line = status_line(hands=5, actions=9, rate=1.0, tables=1, bots=2, errors=0, seconds=3, restarts=2)
    assert line.endswith(" | restarts 2")
    assert "restarts" not in status_line(hands=5, actions=9, rate=1.0, tables=1, bots=2, errors=0, seconds=3)
