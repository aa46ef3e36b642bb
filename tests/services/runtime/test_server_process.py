"""The lifecycle the embedded servers share, proven on a tiny TCP server of our own
(a Python child process: no NATS or PostgreSQL needed)."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from studroom.services.runtime.servers.server_process import (
    RESERVED_PORTS,
    EmbeddedServerError,
    ServerProcess,
    free_port,
    log_tail,
    port_is_free,
)

# Listens on argv[1], writes its pid to argv[2] (so argv names the pid file: the marker).
SERVER = textwrap.dedent("""
    import os, socket, sys
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[1])))
    sock.listen()
    with open(sys.argv[2], "w") as pid_file:
        pid_file.write(f"{os.getpid()}\\n")
    print("listening", flush=True)
    while True:
        sock.accept()[0].close()
""")


class TinyServer(ServerProcess):
    name = "tiny"
    start_timeout = 20.0
    stop_timeout = 5.0

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def _command(self) -> list[str]:
        return [sys.executable, "-c", SERVER, str(self.port), str(self._pid_file())]

    def _ready(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def _pid_file(self) -> Path:
        return self.home / "tiny.pid"

    def _stale_marker(self) -> str:
        return str(self._pid_file())


class FailingServer(TinyServer):
    def _command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; print('no config here'); sys.exit(3)"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TinyServer]:
    tiny = TinyServer(tmp_path)
    yield tiny
    tiny.stop()


def _alive(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is None


def test_free_ports_are_free_and_never_the_well_known_ones() -> None:
    port = free_port()
    assert port not in RESERVED_PORTS
    assert port_is_free(port)
    assert not any(port_is_free(p) for p in RESERVED_PORTS)
    assert not port_is_free(0) and not port_is_free(70000)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert not port_is_free(sock.getsockname()[1])


def test_log_tail_is_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert log_tail(log, lines=2) == "line 98\nline 99"
    assert log_tail(tmp_path / "missing.log") == "(no log)"


def test_start_serves_and_stop_ends_it(server: TinyServer) -> None:
    server.start()
    assert server.is_running() and server.port not in RESERVED_PORTS
    assert "listening" in server.log_path.read_text()  # output goes to the data folder
    assert (server.home / "port").read_text().strip() == str(server.port)
    server.stop()
    assert not server.is_running() and server.pid is None
    server.stop()  # idempotent


def test_kill_then_start_comes_back_on_the_same_port(server: TinyServer) -> None:
    server.start()
    port, pid = server.port, server.pid
    server.kill()
    assert not server.is_running()
    server.start()
    assert server.port == port and server.pid != pid


def test_a_new_run_on_the_same_folder_reuses_the_port(server: TinyServer, tmp_path: Path) -> None:
    port = server.start().port
    server.stop()
    with TinyServer(tmp_path) as again:
        assert again.port == port


def test_one_server_per_data_folder(server: TinyServer, tmp_path: Path) -> None:
    server.start()
    with pytest.raises(EmbeddedServerError, match="another process"):
        TinyServer(tmp_path).start()


def test_a_leftover_server_of_a_dead_process_is_stopped_first(server: TinyServer) -> None:
    server.home.mkdir(parents=True)
    leftover = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(free_port()), str(server._pid_file())],
        stdout=subprocess.DEVNULL, start_new_session=True,
    )
    # Its real parent is gone; here a thread reaps it, as init would.
    reaper = threading.Thread(target=leftover.wait, daemon=True)
    reaper.start()
    try:
        while not server._pid_file().exists():
            assert _alive(leftover)
            time.sleep(0.01)
        server.start()
        reaper.join(timeout=10)
        assert leftover.returncode is not None
        assert server.is_running()
    finally:
        if _alive(leftover):
            leftover.kill()
            leftover.wait()


def test_an_unrelated_process_with_the_stale_pid_is_left_alone(server: TinyServer) -> None:
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        server.home.mkdir(parents=True)
        server._pid_file().write_text(f"{stranger.pid}\n")
        server.start()
        assert _alive(stranger) and server.is_running()
    finally:
        stranger.kill()
        stranger.wait()


def test_a_server_that_exits_is_an_error_with_its_log(tmp_path: Path) -> None:
    failing = FailingServer(tmp_path)
    with pytest.raises(EmbeddedServerError, match="exited with code 3(.|\n)*no config here"):
        failing.start()
    assert not failing.is_running()
    TinyServer(tmp_path).start().stop()  # the folder's lock was released
