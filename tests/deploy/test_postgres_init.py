"""deploy/postgres/init.sql run as deploy/README.md says (psql, as a superuser), on a
PostgreSQL of the test's own: it refuses to run without the password and changes
nothing then; it creates the role, the database and the schemas; run again (with more
stores, a new password) it adds what is missing and fails on nothing."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from nats_nodes import DEPLOY
from studroom.services.runtime.servers.embedded_postgres import (
    EmbeddedPostgres,
    postgres_bin_dir,
)

pytestmark = pytest.mark.integration

INIT = DEPLOY / "postgres" / "init.sql"


@pytest.fixture
def postgres(private_dir: Path) -> Iterator[EmbeddedPostgres]:
    with EmbeddedPostgres(private_dir, database="postgres") as server:
        yield server


def _init(postgres: EmbeddedPostgres, *variables: str) -> subprocess.CompletedProcess[str]:
    """``psql -v ON_ERROR_STOP=1 -v ... -f deploy/postgres/init.sql`` as the superuser."""
    command = [str(postgres_bin_dir() / "psql"), postgres.url_for("postgres"), "-X", "-q", "-v", "ON_ERROR_STOP=1"]
    for variable in variables:
        command += ["-v", variable]
    return subprocess.run([*command, "-f", str(INIT)], capture_output=True, text=True, check=False)


def _studroom(postgres: EmbeddedPostgres) -> tuple[set[str], str | None]:
    """The schemas the role studroom owns in the database studroom, and its password hash."""
    with psycopg.connect(postgres.url_for("postgres"), autocommit=True) as conn:
        role = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'studroom' AND rolcanlogin"
                            ).fetchone()
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'studroom'").fetchone():
            return set(), None if role is None else role[0]
    with psycopg.connect(postgres.url_for("studroom"), autocommit=True) as conn:
        schemas = {name for (name,) in conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspowner = 'studroom'::regrole")}
    return schemas, role[0]


def test_init_sql_refuses_without_a_password_and_can_be_run_again(postgres: EmbeddedPostgres) -> None:
    refused = _init(postgres)
    assert refused.returncode != 0 and "password" in refused.stderr
    with psycopg.connect(postgres.url_for("postgres"), autocommit=True) as conn:
        assert not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'studroom'").fetchone()

    first = _init(postgres, "password=it's a secret")           # a quote in it: quoted by psql
    assert first.returncode == 0, first.stderr
    schemas, hashed = _studroom(postgres)
    assert schemas == {"studroom_p0", "studroom_p1", "studroom_cashier", "studroom_history", "studroom_ledger"}
    assert hashed and hashed.startswith("SCRAM-SHA-256$") and "secret" not in hashed

    again = _init(postgres, "password=another", "stores=3")
    assert again.returncode == 0, again.stderr
    schemas_again, hashed_again = _studroom(postgres)
    assert schemas_again == schemas | {"studroom_p2"}
    assert hashed_again != hashed                                  # the password was set again

    # The role may create the services' tables in its schemas (the services do at first start).
    with psycopg.connect(postgres.url_for("studroom"), user="studroom", password="another", autocommit=True) as conn:
        conn.execute("CREATE TABLE studroom_p2.probe (id int)")
        conn.execute("DROP TABLE studroom_p2.probe")
