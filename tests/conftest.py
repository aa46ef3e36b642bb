"""Real servers for the integration tests, started once per session.

External servers are used when ``STUDROOM_NATS_URL`` / ``STUDROOM_DATABASE_URL``
are set; otherwise embedded ones run in a temporary folder (not the developer's
``STUDROOM_DATA_DIR``), started on first use and stopped at the end.

``nats_url`` is an OPEN server (no credentials; the command subject mappings in the
global account) for tests of other concerns.  The trust tests use a SECURE one, as
the room runs it (operator mode, docs/design/trust.md): ``secure_nats_url``, its
``authority``, and ``connect_as(role, name)``.

``live_room`` is a room that plays (its servers and every service), shared by the tests
that only need one; ``room_command`` one run of ``studroom room`` (tests/live_room.py).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from live_room import LiveRoom, RoomCommand, run_room_command
from studroom.services.auth.authority import Authority
from studroom.services.runtime.processes import process
from studroom.services.runtime.settings import Settings
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres


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
    with EmbeddedNats(settings.data_dir, auth=False) as server:
        yield server


@pytest.fixture(scope="session")
def secure_nats() -> Iterator[EmbeddedNats]:
    """The session's NATS in operator mode: no connection without credentials."""
    data_dir = Path(tempfile.mkdtemp(prefix="studroom-it-secure-"))
    with EmbeddedNats(data_dir) as server:
        yield server
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def secure_nats_url(secure_nats: EmbeddedNats) -> str:
    return secure_nats.url


@pytest.fixture(scope="session")
def authority(secure_nats: EmbeddedNats) -> Authority:
    """The Authority the secure server trusts: it issues the tests' identities."""
    assert secure_nats.authority is not None
    return secure_nats.authority


ConnectAs = Callable[..., Awaitable[Any]]


@pytest.fixture(scope="session")
def connect_as(secure_nats_url: str, authority: Authority) -> ConnectAs:
    """``await connect_as(role, name, **options)``: a connection to the secure server
    as that identity (issued on first use); the caller closes it."""

    async def connect(role: str, name: str, **options: Any) -> Any:
        return await process.connect(secure_nats_url, f"test-{role}-{name}",
                                     creds=authority.ensure(role, name), **options)

    return connect


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


@pytest.fixture(scope="session")
def live_room(database_url: str) -> Iterator[LiveRoom]:
    """The session's shared room (tests/live_room.py), started on first use."""
    room = LiveRoom(database_url)
    try:
        room.start()
        yield room
    finally:
        problems = room.stop()
    assert not problems, f"the shared room's services: {problems}"


@pytest.fixture(scope="session")
def room_command() -> Iterator[RoomCommand]:
    """One ``studroom room`` run on servers of its own, in a fresh data folder
    (tests/live_room.py); the folder stays until the session ends."""
    data_dir = Path(tempfile.mkdtemp(prefix="studroom-it-room-cli-"))
    try:
        yield run_room_command(data_dir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
