"""Small modules: every module of the room and its tools is under 400 lines, except the
table aggregate (domain/table.py), which holds the one state machine of a table."""

from __future__ import annotations

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
LIMIT = 400
EXCEPTIONS = {"domain/table.py"}


def test_every_module_is_under_400_lines() -> None:
    too_long = sorted(
        f"{path.relative_to(REPOSITORY)}: {lines} lines"
        for folder in ("domain", "services", "projections", "tools")
        for path in (REPOSITORY / folder).rglob("*.py")
        if str(path.relative_to(REPOSITORY)) not in EXCEPTIONS
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) >= LIMIT)
    assert too_long == []
