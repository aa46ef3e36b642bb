"""A server as a child process: lock, port, spawn, wait until ready, stop, kill.

The lifecycle shared by the embedded NATS and PostgreSQL (see
docs/design/embedded-servers.md): a server runs in its own session on a free port
of 127.0.0.1 (never a well-known one), with its data and log in a folder of its
own; a lock file keeps a second process off that folder, and a server left
running by a dead process is found by its pid file and stopped first.
POSIX only (Linux, macOS).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Self

from ..observability.logs import mask
from ..retry import Backoff

if TYPE_CHECKING:
    from types import TracebackType

log = logging.getLogger(__name__)

# Ports we never hand out, even if the OS offers them: the usual NATS (client,
# cluster, monitoring, leafnode) and PostgreSQL ports.
RESERVED_PORTS = frozenset({4222, 5432, 6222, 7422, 8222})
# Asking a server we just started whether it is ready: often at first (NATS is up in
# milliseconds), less as it takes longer (PostgreSQL's first start, a loaded machine).
READY_POLL = Backoff(first=0.02, longest=0.25)


class EmbeddedServerError(RuntimeError):
    """An embedded server could not be started or stopped."""


# --------------------------------------------------------------------------- ports


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nobody listens on now (asked from the OS)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in RESERVED_PORTS:
            return port
    raise EmbeddedServerError("the OS gave no usable free port")  # pragma: no cover


def port_is_free(port: int) -> bool:
    """True if a server could bind 127.0.0.1:port now (SO_REUSEADDR, as servers do)."""
    if port in RESERVED_PORTS or not 0 < port < 65536:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# ------------------------------------------------------------------------- helpers


def _cmdline(pid: int) -> str | None:
    """The command line of a live process, or None if there is none."""
    proc = Path(f"/proc/{pid}/cmdline")
    if proc.parent.parent.is_dir() and Path("/proc/self").exists():
        try:
            return proc.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return None
    result = subprocess.run(  # macOS
        ["ps", "-o", "command=", "-p", str(pid)],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pid: int, sig: int) -> None:
    """Signal the process group led by pid (our servers lead their own session)."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _stop_stale(pid_file: Path, marker: str, sig: int) -> None:
    """Stop a server left running by a dead process (found by its pid file).

    Only a process whose command line names ``marker`` (our config file or data
    folder) is touched, never an unrelated process that got the same pid.
    """
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    if pid == os.getpid() or not _pid_alive(pid):
        return
    cmdline = _cmdline(pid)
    if not cmdline or marker not in cmdline:
        return
    log.warning("stopping a leftover server (pid %d): %s", pid, cmdline)
    _signal_group(pid, sig)
    deadline = time.monotonic() + 20
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _pid_alive(pid):
        _signal_group(pid, signal.SIGKILL)
        while _pid_alive(pid) and time.monotonic() < deadline + 5:
            time.sleep(0.05)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class ServerProcess:
    """Lifecycle shared by the embedded servers: lock, port, spawn, stop, kill."""

    name = "server"
    stop_signal = signal.SIGTERM
    start_timeout = 60.0
    stop_timeout = 60.0

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir).expanduser().absolute()
        self.home = self.data_dir / self.name
        self.log_path = self.home / f"{self.name}.log"
        self._port_path = self.home / "port"
        self._port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock_file: IO[str] | None = None
        self._atexit_registered = False

    # -- public API

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmbeddedServerError(f"embedded {self.name} was never started")
        return self._port

    @property
    def url(self) -> str:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> Self:
        """Start the server (no-op if running) and wait until it serves requests."""
        if self.is_running():
            return self
        self.home.mkdir(parents=True, exist_ok=True)
        self._acquire_lock()
        try:
            self._stop_leftover()
            self._prepare()
            self._spawn_until_ready()
        except BaseException:
            if self._proc is not None and self._proc.poll() is None:
                self._kill_process()
            self._proc = None
            self._release_lock()
            raise
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        return self

    def stop(self) -> None:
        """Clean shutdown; SIGKILL if it does not finish in time. Idempotent."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            _signal_group(proc.pid, self.stop_signal)
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop in time: killing it", self.name)
                self._kill_process()
        self._proc = None
        self._release_lock()
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False

    def kill(self) -> None:
        """SIGKILL the server and its children (a crash, for fault tests).

        The data folder stays locked by us; ``start()`` starts it again on the
        same port with the same data.
        """
        if self._proc is not None and self._proc.poll() is None:
            self._kill_process()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"url={mask(self.url)!r}" if self._port else "not started"
        return f"{type(self).__name__}({str(self.data_dir)!r}, {state})"

    # -- for subclasses

    def _prepare(self) -> None:
        """Create config/data before the (first) spawn."""

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _popen_kwargs(self) -> dict[str, object]:
        return {}

    def _ready(self) -> bool:
        raise NotImplementedError

    def _after_ready(self) -> None:
        """Run once the server answers (e.g. create the database)."""

    def _pid_file(self) -> Path:
        raise NotImplementedError

    def _stale_marker(self) -> str:
        raise NotImplementedError

    # -- internals

    def _acquire_lock(self) -> None:
        if self._lock_file is not None:
            return
        lock_file = (self.home / f"{self.name}.lock").open("a+")
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.seek(0)
            owner = lock_file.read().strip() or "?"
            lock_file.close()
            msg = (
                f"the embedded {self.name} in {self.home} is run by another process "
                f"(pid {owner}); use another data folder or point the settings "
                "at that server"
            )
            raise EmbeddedServerError(msg) from None
        lock_file.seek(0)
        lock_file.truncate()
        lock_file.write(f"{os.getpid()}\n")
        lock_file.flush()
        self._lock_file = lock_file

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def _stop_leftover(self) -> None:
        if self._proc is None:  # not after our own kill(): that one is dead
            _stop_stale(self._pid_file(), self._stale_marker(), self.stop_signal)

    def _choose_port(self, retry: bool) -> int:
        if self._port is not None and (not retry) and port_is_free(self._port):
            return self._port  # restart after kill(): same address for clients
        if self._port is None and not retry:
            with contextlib.suppress(OSError, ValueError):
                previous = int(self._port_path.read_text())
                if port_is_free(previous):
                    return previous
        return free_port()

    def _spawn_until_ready(self) -> None:
        attempts = 3
        for attempt in range(attempts):
            self._port = self._choose_port(retry=attempt > 0)
            self._port_path.write_text(f"{self._port}\n")
            command = self._command()
            with self.log_path.open("ab") as log_file:
                stamp = time.strftime("%Y-%m-%d %H:%M:%S")
                log_file.write(f"\n=== {stamp} starting: {' '.join(command)}\n".encode())
                log_file.flush()
                self._proc = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    close_fds=True,
                    **self._popen_kwargs(),  # type: ignore[arg-type]
                )
            deadline, pauses = time.monotonic() + self.start_timeout, READY_POLL.pauses()
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    break
                if self._ready():
                    self._after_ready()
                    log.info("embedded %s ready at %s", self.name, mask(self.url))
                    return
                time.sleep(next(pauses))
            else:
                self._kill_process()
                msg = (
                    f"embedded {self.name} not ready after {self.start_timeout}s; "
                    f"log {self.log_path}:\n{log_tail(self.log_path)}"
                )
                raise EmbeddedServerError(msg)
            tail = log_tail(self.log_path)
            if "address already in use" in tail.lower() and attempt + 1 < attempts:
                log.info("port %d was taken meanwhile; trying another", self._port)
                continue
            msg = (
                f"embedded {self.name} exited with code {self._proc.returncode}; "
                f"log {self.log_path}:\n{tail}"
            )
            raise EmbeddedServerError(msg)

    def _kill_process(self) -> None:
        assert self._proc is not None
        _signal_group(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
