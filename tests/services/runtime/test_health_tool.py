"""``studroom health`` without a room: one line saying so, exit 1 (its table during a
room run: test_observability.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from studroom.services.cli import main
from studroom.services.runtime.settings import DATA_DIR_VAR, NATS_URL_VAR


def test_no_room_running_is_said_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(NATS_URL_VAR, raising=False)
    monkeypatch.setenv(DATA_DIR_VAR, str(tmp_path))
    assert main(["health"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["studroom: no NATS: set STUDROOM_NATS_URL, or start `studroom room` first"]
