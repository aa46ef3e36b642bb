"""Settings read from the environment.

``STUDROOM_NATS_URL``
    URL(s) of an external NATS server with JetStream, e.g. ``nats://10.0.0.5:4222``
    (several may be given, comma separated). Unset or empty: an embedded
    ``nats-server`` is started in the data folder (see ``runtime.servers``).
``STUDROOM_DATABASE_URL``
    DSN of an external PostgreSQL database, e.g.
    ``postgresql://studroom:secret@db.internal:5432/studroom``. Unset or empty: an
    embedded PostgreSQL is started in the data folder.
``STUDROOM_NATS_CREDS``
    Path of this process's NATS credentials (a ``.creds`` file: its identity, see
    docs/design/trust.md). Unset: the process uses the embedded room's credentials
    when it started the embedded NATS itself, else connects without credentials.
``STUDROOM_NATS_CA``
    Path of the CA certificate (PEM) the NATS servers' certificates are checked
    against: the room's own CA (``studroom auth tls``, docs/operating.md "TLS").
    Set: every NATS connection is TLS (a server that offers none is refused), whatever
    the URL's scheme. Unset: ``tls://`` URLs are checked against the system's CAs.
    A process's children inherit it.
``STUDROOM_DATA_DIR``
    Folder of the embedded servers' data and logs. Default: ``.studroom`` in the
    current directory. Starting again on the same folder keeps the data.
``STUDROOM_LOG_LEVEL``
    The log level of the service processes when ``--log-level`` is not given
    (DEBUG, INFO, WARNING or ERROR). Default: INFO.
``STUDROOM_LOG_FORMAT``
    ``text`` (key=value, the default) or ``json`` lines, when ``--log-format`` is not given.
``STUDROOM_METRICS_PORT``
    Serve ``/metrics`` and ``/healthz`` on 127.0.0.1 at this port when ``--metrics-port``
    is not given (0: any free port). Unset: not served.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

NATS_URL_VAR = "STUDROOM_NATS_URL"
DATABASE_URL_VAR = "STUDROOM_DATABASE_URL"
NATS_CREDS_VAR = "STUDROOM_NATS_CREDS"
NATS_CA_VAR = "STUDROOM_NATS_CA"
DATA_DIR_VAR = "STUDROOM_DATA_DIR"
LOG_LEVEL_VAR = "STUDROOM_LOG_LEVEL"
LOG_FORMAT_VAR = "STUDROOM_LOG_FORMAT"
METRICS_PORT_VAR = "STUDROOM_METRICS_PORT"
DEFAULT_DATA_DIR = ".studroom"
DEFAULT_LOG_LEVEL = "INFO"

_NATS_SCHEMES = ("nats://", "tls://", "ws://", "wss://")
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the servers are. ``None`` means: start an embedded one in ``data_dir``."""

    nats_url: str | None = None
    database_url: str | None = None
    data_dir: Path = Path(DEFAULT_DATA_DIR)
    nats_creds: Path | None = None
    nats_ca: Path | None = None

    def __post_init__(self) -> None:
        if self.nats_ca is not None and not self.nats_ca.is_file():
            raise ValueError(f"{NATS_CA_VAR}: no CA certificate at {self.nats_ca}")
        if self.nats_url is not None:
            for url in self.nats_url.split(","):
                if not url.strip().startswith(_NATS_SCHEMES):
                    msg = f"{NATS_URL_VAR}: expected nats://host:port, got {url!r}"
                    raise ValueError(msg)
        if self.database_url is not None and not self.database_url.startswith(_POSTGRES_SCHEMES):
            msg = (                           # not the URL itself: it may carry a password
                f"{DATABASE_URL_VAR}: expected postgresql://user@host:port/db, "
                f"got a URL of scheme {self.database_url.partition(':')[0]!r}"
            )
            raise ValueError(msg)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from ``env`` (default: ``os.environ``)."""
        env = os.environ if env is None else env
        data_dir = env.get(DATA_DIR_VAR, "").strip() or DEFAULT_DATA_DIR
        creds = env.get(NATS_CREDS_VAR, "").strip()
        return cls(
            nats_url=env.get(NATS_URL_VAR, "").strip() or None,
            database_url=env.get(DATABASE_URL_VAR, "").strip() or None,
            data_dir=Path(data_dir).expanduser().absolute(),
            nats_creds=Path(creds).expanduser().absolute() if creds else None,
            nats_ca=nats_ca_from_env(env),
        )

    def to_env(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """``env`` (default: ``os.environ``) with these settings, for a child process
        (``from_env`` reads them back there); without a CA of its own the child
        trusts what ``env`` names."""
        out = dict(os.environ if env is None else env)
        if self.nats_ca is not None:
            out[NATS_CA_VAR] = str(self.nats_ca)
        creds = None if self.nats_creds is None else str(self.nats_creds)
        for var, value in ((NATS_URL_VAR, self.nats_url), (DATABASE_URL_VAR, self.database_url),
                           (NATS_CREDS_VAR, creds)):
            if value is None:
                out.pop(var, None)
            else:
                out[var] = value
        out[DATA_DIR_VAR] = str(self.data_dir)
        return out

    @property
    def embedded_nats(self) -> bool:
        return self.nats_url is None

    @property
    def embedded_postgres(self) -> bool:
        return self.database_url is None


def nats_ca_from_env(env: Mapping[str, str] | None = None) -> Path | None:
    """The CA the NATS servers' certificates are checked against (``STUDROOM_NATS_CA``)."""
    env = os.environ if env is None else env
    ca = env.get(NATS_CA_VAR, "").strip()
    return Path(ca).expanduser().absolute() if ca else None


def log_level_from_env(env: Mapping[str, str] | None = None) -> str:
    """The processes' default log level (``STUDROOM_LOG_LEVEL``, else INFO)."""
    env = os.environ if env is None else env
    return env.get(LOG_LEVEL_VAR, "").strip() or DEFAULT_LOG_LEVEL


def log_format_from_env(env: Mapping[str, str] | None = None) -> str:
    """The processes' default log format (``STUDROOM_LOG_FORMAT``: json, else text)."""
    env = os.environ if env is None else env
    return "json" if env.get(LOG_FORMAT_VAR, "").strip().lower() == "json" else "text"


def metrics_port_from_env(env: Mapping[str, str] | None = None) -> int | None:
    """The processes' default metrics port (``STUDROOM_METRICS_PORT``), None: not served."""
    env = os.environ if env is None else env
    value = env.get(METRICS_PORT_VAR, "").strip()
    return int(value) if value.isdecimal() else None
