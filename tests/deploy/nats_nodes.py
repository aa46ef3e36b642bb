"""NATS servers of the deploy tests, from the files of deploy/nats as an administrator
installs them: an /etc/nats with the generated trust configuration and TLS files
(`studroom auth tls`, for 127.0.0.1), one folder per host (its own JetStream store,
its route port), servers on free ports of the test's own (command-line flags override
the file's ports, nothing else). Clients, routes and the monitor all speak TLS."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from in_process import studroom
from studroom.services.runtime.servers.embedded_nats import nats_server_binary
from studroom.services.runtime.servers.server_process import free_port

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ROUTE_PASSWORD = "route-secret-for-the-test"
TLS_FOLDER = "/etc/nats/tls/"           # where the deploy configurations expect the TLS files


def etc_nats(folder: Path) -> Path:
    """An /etc/nats in ``folder``: the deploy configurations, the trust configuration
    that ``studroom auth server-config`` writes from a new Authority in ``auth/``, and
    the TLS files ``studroom auth tls`` writes (its CA beside the Authority) into
    ``tls/``, where the configurations are pointed."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("studroom.conf", "cluster.conf"):
        text = (DEPLOY / "nats" / name).read_text()
        assert TLS_FOLDER in text, name
        (folder / name).write_text(text.replace(TLS_FOLDER, f"{folder / 'tls'}/"))
    (folder / "studroom-auth.conf").write_text(studroom_cli("auth", "server-config", "--auth-dir",
                                                            str(folder / "auth")))
    studroom_cli("auth", "tls", "--auth-dir", str(folder / "auth"), "--out", str(folder / "tls"),
                 "--host", "127.0.0.1")
    return folder


def ca_of(etc: Path) -> Path:
    """The CA certificate clients of ``etc_nats(etc)``'s servers trust."""
    return etc / "tls" / "ca.pem"


def studroom_cli(*args: str, env: dict[str, str] | None = None) -> str:
    """What ``studroom ARGS`` prints (it must succeed), ``env`` added to the environment
    (its ``main``, in the test's process: tests/in_process.py)."""
    done = studroom(args, env)
    assert done.returncode == 0, f"studroom {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout


def node(etc: Path, name: str, cluster_port: int = 6222) -> Path:
    """A host's /etc/nats: the same files, but JetStream's store in a folder of its own
    and the route port moved (in the file: a ``--cluster`` flag would replace the
    cluster's authorization, see cluster.conf)."""
    folder = etc / name
    folder.mkdir()
    for conf, was, now in (("studroom.conf", "store_dir: /var/lib/nats", f"store_dir: {folder / 'jetstream'}"),
                           ("cluster.conf", "port: 6222", f"port: {cluster_port}"),
                           ("studroom-auth.conf", "", "")):
        text = (etc / conf).read_text()
        assert was in text
        (folder / conf).write_text(text.replace(was, now) if was else text)
    return folder


def route_env(name: str, cluster_ports: list[int], password: str = ROUTE_PASSWORD) -> dict[str, str]:
    """cluster.conf's environment for node ``name`` of a cluster on ``cluster_ports``."""
    env = {"NATS_SERVER_NAME": name, "NATS_ROUTE_PASSWORD": password}
    for k, port in enumerate(cluster_ports, start=1):
        env[f"NATS_ROUTE_{k}"] = f"nats-route://route:{password}@127.0.0.1:{port}"
    return env


class Server:
    """A nats-server of the test's own from a deploy configuration (``None``: flags
    only), its client and monitoring ports free ones on loopback given as flags (a
    cluster then tells its clients of the others' loopback URLs); it logs into
    ``home``. With ``ca`` (the CA of its TLS files) its clients and monitor speak TLS
    (the monitor https). :meth:`kill` and :meth:`restart` keep its ports and its store."""

    def __init__(self, config: Path | None, home: Path, env: dict[str, str] | None = None,
                 cluster_port: int | None = None, extra: list[str] | None = None, ca: Path | None = None) -> None:
        self.port, self.monitor = free_port(), free_port()
        self.tls = None if ca is None else ssl.create_default_context(cafile=str(ca))
        monitor_flag = "-m" if ca is None else "-ms"
        self.command = [str(nats_server_binary()), "-a", "127.0.0.1", "-p", str(self.port),
                        monitor_flag, str(self.monitor)]
        if config is not None:
            self.command += ["-c", str(config)]
        if cluster_port is not None:
            self.command += ["--cluster", f"nats://127.0.0.1:{cluster_port}"]
        self.command += extra or []
        self.env = {**os.environ, **(env or {})}
        home.mkdir(parents=True, exist_ok=True)
        self.log = home / "nats.log"
        self.proc = self._spawn()
        self.wait_until(lambda: self.get("varz") is not None, "the server did not start")

    def _spawn(self) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as log:
            return subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, env=self.env)

    @property
    def url(self) -> str:
        return f"{'nats' if self.tls is None else 'tls'}://127.0.0.1:{self.port}"

    def get(self, what: str) -> dict | None:
        url = f"{'http' if self.tls is None else 'https'}://127.0.0.1:{self.monitor}/{what}"
        with contextlib.suppress(OSError, ValueError), \
                urllib.request.urlopen(url, timeout=1, context=self.tls) as answer:
            return json.load(answer)
        return None

    def healthy(self) -> bool:
        """The server's own verdict (``/healthz``): JetStream on and current with the cluster."""
        return (self.get("healthz") or {}).get("status") == "ok"

    def route_names(self) -> set[str]:
        routez = self.get("routez") or {}
        return {route.get("remote_name", "") for route in routez.get("routes") or []}

    def wait_until(self, condition: Callable[[], object], what: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.proc.poll() is None, f"{what}: it exited; {self.log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"{what}; {self.log.read_text()[-2000:]}"
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no goodbye to the cluster, no flush of its store."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def restart(self) -> None:
        self.proc = self._spawn()

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def cluster(etc: Path, size: int = 3) -> list[Server]:
    """``size`` nodes from cluster.conf, routes among them, JetStream current on each."""
    ports = [free_port() for _ in range(size)]
    names = [f"nats-{k}" for k in range(1, size + 1)]
    servers = []
    try:
        for name, port in zip(names, ports):
            folder = node(etc, name, port)
            servers.append(Server(folder / "cluster.conf", folder, route_env(name, ports), ca=ca_of(etc)))
        for server in servers:
            server.wait_until(server.healthy, "the node did not become healthy", timeout=30)
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers


@contextlib.contextmanager
def running(*servers: Server) -> Iterator[None]:
    try:
        yield
    finally:
        for server in servers:
            server.stop()
