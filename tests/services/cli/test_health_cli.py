"""``studroom health``: without a room, or refused by its NATS, one line saying so, exit
1; on the shared live room its table, each instance's readiness in it (the table during
a room run of its own: test_observability.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from live_room import LiveRoom
from studroom.services.cli.health import readiness
from studroom.services.cli.main import main
from studroom.services.runtime.settings import DATA_DIR_VAR, NATS_CREDS_VAR, NATS_URL_VAR

SERVICES = 8           # the live room's: two table instances, relay, timer, cashier, lobby, history, ledger


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


def test_a_nats_that_refuses_the_missing_credentials_is_said_so(
        secure_nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(NATS_URL_VAR, secure_nats_url)      # an external NATS, in operator mode
    monkeypatch.delenv(NATS_CREDS_VAR, raising=False)
    monkeypatch.setenv(DATA_DIR_VAR, str(tmp_path))
    assert main(["health"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"studroom: cannot ask the services on {secure_nats_url}: the NATS server refused the connection: "
        "authorization violation; set STUDROOM_NATS_CREDS to an operator's credentials"]


def test_every_instance_of_the_live_room_says_its_readiness(
        live_room: LiveRoom, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(NATS_URL_VAR, live_room.url)
    monkeypatch.setenv(NATS_CREDS_VAR, str(live_room.authority.ensure("operator", "floor")))
    monkeypatch.setenv(DATA_DIR_VAR, str(tmp_path))
    for _ in range(20):     # the services join discovery in the background, the relay is ready once connected
        code, (header, _rule, *rows) = main(["health"]), capsys.readouterr().out.splitlines() or ["", ""]
        if code == 0 and len(rows) >= SERVICES:
            break
    assert code == 0 and header.split()[:5] == ["SERVICE", "INSTANCE", "VERSION", "UP", "READY"]
    assert len(rows) == SERVICES and all(row.split()[4] == "ready" for row in rows), rows


@pytest.mark.parametrize(("data", "said"), [({"ready": 1.0}, "ready"), ({"ready": 0.0}, "not ready"),
                                            ({"up_seconds": 3.0}, "?")])      # "?": a version without it
def test_an_instance_readiness_is_its_ready_reading(data: dict[str, float], said: str) -> None:
    assert readiness({"endpoints": [{"name": "health", "data": data}]}) == said
