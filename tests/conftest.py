"""Real servers for the integration tests, started once per session.

External servers are used when ``STUDROOM_NATS_URL`` / ``STUDROOM_DATABASE_URL``
are set; otherwise embedded ones run in a temporary folder (not the developer's
``STUDROOM_DATA_DIR``), started on first use and stopped at the end.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from studroom.services.runtime.settings import Settings
from studroom.services.runtime.embedded_nats import EmbeddedNats
from studroom.services.runtime.embedded_postgres import EmbeddedPostgres


@pytest.fixture(scope="session")
def settings() -> Iterator[Settings]:
    external = Settings.from_env()
    # mkdtemp rather than pytest's tmp folders: those live in a 0700 folder that
    # the unprivileged PostgreSQL user (when we run as root) could not enter.
    data_dir = Path(tempfile.mkdtemp(prefix="studroom-it-"))
    yield Settings(
        nats_url=external.nats_url,
        database_url=external.database_url,
        data_dir=data_dir,
    )
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def embedded_nats(settings: Settings) -> Iterator[EmbeddedNats | None]:
    """The session's embedded NATS, or None when an external one is configured."""
    if settings.nats_url is not None:
        yield None
        return
    with EmbeddedNats(settings.data_dir) as server:
        yield server


@pytest.fixture(scope="session")
def embedded_postgres(settings: Settings) -> Iterator[EmbeddedPostgres | None]:
    """The session's embedded PostgreSQL, or None when an external one is configured."""
    if settings.database_url is not None:
        yield None
        return
    with EmbeddedPostgres(settings.data_dir) as server:
        yield server


@pytest.fixture(scope="session")
def nats_url(settings: Settings, embedded_nats: EmbeddedNats | None) -> str:
    return settings.nats_url or embedded_nats.url  # type: ignore[union-attr]


@pytest.fixture(scope="session")
def database_url(settings: Settings, embedded_postgres: EmbeddedPostgres | None) -> str:
    return settings.database_url or embedded_postgres.url  # type: ignore[union-attr]


@pytest.fixture
def private_dir() -> Iterator[Path]:
    """A fresh folder an embedded server of a single test may use (see ``settings``)."""
    path = Path(tempfile.mkdtemp(prefix="studroom-it-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
