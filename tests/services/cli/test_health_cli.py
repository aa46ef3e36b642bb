"""``studroom health`` without a room: one line saying so, exit 1 (its table during a
room run: test_observability.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from studroom.services.cli.main import main
from studroom.services.runtime.settings import DATA_DIR_VAR, NATS_URL_VAR


def test_no_room_running_is_said_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(NATS_URL_VAR, raising=False)
    monkeypatch.setenv(DATA_DIR_VAR, str(tmp_path))
    assert main(["health"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["studroom: no NATS: set STUDROOM_NATS_URL, or start `studroom room` first"]


def test_a_nats_that_does_not_answer_is_said_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:                   # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv(NATS_URL_VAR, f"nats://user:secret@127.0.0.1:{port}")
    monkeypatch.setenv(DATA_DIR_VAR, str(tmp_path))
    assert main(["health"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"studroom: cannot ask the services on nats://***@127.0.0.1:{port}")
