"""A tool finds the room's NATS the way it finds its PostgreSQL (runtime/servers/attach.py):
the settings' URL, else the embedded server whose lock a running room holds in the
data folder; a port file left by a stopped room is not a server."""

from __future__ import annotations

import fcntl
from pathlib import Path

from studroom.services.runtime.servers.attach import nats_url, running_nats
from studroom.services.runtime.settings import Settings


def test_the_running_rooms_nats_is_found_and_a_stale_port_file_is_not(tmp_path: Path) -> None:
    home = tmp_path / "nats"
    home.mkdir()
    (home / "port").write_text("4333\n")
    (home / "nats.lock").write_text("")
    assert running_nats(tmp_path) is None                      # nobody holds the lock: stopped
    with (home / "nats.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)           # as the running room does
        assert running_nats(tmp_path) == "nats://127.0.0.1:4333"
        assert nats_url(Settings(data_dir=tmp_path)) == "nats://127.0.0.1:4333"
    assert nats_url(Settings(nats_url="nats://elsewhere:4222", data_dir=tmp_path)) == "nats://elsewhere:4222"
