"""Settings read from the environment.

``STUDROOM_NATS_URL``
    URL(s) of an external NATS server with JetStream, e.g. ``nats://10.0.0.5:4222``
    (several may be given, comma separated). Unset or empty: an embedded
    ``nats-server`` is started in the data folder (see ``runtime.servers``).
``STUDROOM_DATABASE_URL``
    DSN of an external PostgreSQL database, e.g.
    ``postgresql://studroom:secret@db.internal:5432/studroom``. Unset or empty: an
    embedded PostgreSQL is started in the data folder. It is the room's "home" server:
    the cashier's store, the books, the histories and the stores not named below.
``STUDROOM_STORE_URLS``
    Event stores on other PostgreSQL servers than the home one, comma separated
    ``<store>=<URL>`` (``1=postgresql://db2.internal/studroom,3=...``; ``p1=`` is the
    same as ``1=``). Unset: every store on the home server. The first start records
    each store's server in the home database and every later process must agree
    (docs/design/event-store.md "Stores on several servers").
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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

NATS_URL_VAR = "STUDROOM_NATS_URL"
DATABASE_URL_VAR = "STUDROOM_DATABASE_URL"
STORE_URLS_VAR = "STUDROOM_STORE_URLS"
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
    store_urls: tuple[tuple[int, str], ...] = ()      # (store index, URL): stores not on the home server

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
        for index, url in self.store_urls:
            if index < 0 or not url.startswith(_POSTGRES_SCHEMES):
                raise ValueError(f"{STORE_URLS_VAR}: expected <store>=postgresql://user@host:port/db, "
                                 f"got store {index} at a URL of scheme {url.partition(':')[0]!r}")

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
            store_urls=store_urls_from_env(env),
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
        if self.store_urls:
            out[STORE_URLS_VAR] = format_store_urls(self.store_urls)
        else:
            out.pop(STORE_URLS_VAR, None)
        out[DATA_DIR_VAR] = str(self.data_dir)
        return out

    @property
    def embedded_nats(self) -> bool:
        return self.nats_url is None

    @property
    def embedded_postgres(self) -> bool:
        return self.database_url is None


def store_urls_from_env(env: Mapping[str, str] | None = None) -> tuple[tuple[int, str], ...]:
    """``STUDROOM_STORE_URLS`` as ``((store, URL), ...)`` (empty: every store at home)."""
    env = os.environ if env is None else env
    return parse_store_urls(env.get(STORE_URLS_VAR, ""))


def parse_store_urls(text: str) -> tuple[tuple[int, str], ...]:
    """``"1=postgresql://a/db,p2=postgresql://b/db"`` -> ``((1, ...), (2, ...))``."""
    found: dict[int, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, url = item.partition("=")
        key = key.strip().lstrip("p")
        if not sep or not key.isdecimal():
            raise ValueError(f"{STORE_URLS_VAR}: expected <store>=<URL> items, got one without a store number")
        found[int(key)] = url.strip()
    return tuple(sorted(found.items()))


def format_store_urls(urls: Iterable[tuple[int, str]]) -> str:
    """The value of ``STUDROOM_STORE_URLS`` for ``urls`` (what :func:`parse_store_urls` reads)."""
    return ",".join(f"{index}={url}" for index, url in urls)


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
