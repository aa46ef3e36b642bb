"""`studroom room` starts the console as one of its child processes (no identity of its
own: it connects in each person's name) on the port it chose and says."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

import pytest

from studroom.services.auth.authority import Authority
from studroom.services.console.bootstrap import DEFAULT_PORT, HOST
from studroom.services.room.room import console_port
from studroom.services.runtime.processes.supervisor import Services
from studroom.services.runtime.settings import NATS_CREDS_VAR


def test_the_room_runs_the_console_as_a_child_without_service_credentials() -> None:
    folder = Path(tempfile.mkdtemp(prefix="studroom-console-room-"))
    services = Services({"STUDROOM_DATA_DIR": str(folder)}, folder / "logs", instances=1, stores=1,
                        authority=Authority(folder / "auth"), console_port=8123)
    (name, command), = [(n, c) for n, c in services.commands() if "console" in c]
    assert name == "room-console" and command[-4:] == ["--port", "8123", "--log-level", "WARNING"]
    assert ("service", "console") not in services.identities()
    assert ("service", "projections") in services.identities()          # its desk's dead-letter reader
    assert NATS_CREDS_VAR not in services.env_of(command)
    assert not any("console" in c for _, c in Services({}, folder, instances=1, stores=1).commands())


def test_the_consoles_port_is_the_default_if_free_else_a_free_one() -> None:
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit, match="taken"):
            console_port(port)                     # asked for: no other
        assert console_port(0) not in (0, port)
    chosen = console_port(None)
    with socket.socket() as probe:
        free = probe.connect_ex((HOST, DEFAULT_PORT)) != 0
    assert chosen == DEFAULT_PORT or not free
