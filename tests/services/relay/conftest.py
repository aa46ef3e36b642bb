"""The relay tests' fixtures: a fresh database on the session's PostgreSQL (so the
schemas studroom_p0 and studroom_p1 are new) and its stores."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql
from relay_stack import SCHEMAS
from studroom.services.store.postgres import PostgresEventStore


@pytest.fixture
def database(database_url: str) -> Iterator[str]:
    """A database of the test's own, dropped at the end."""
    name = f"relay_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield urlunsplit(urlsplit(database_url)._replace(path=f"/{name}"))
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def stores(database: str) -> Iterator[dict[str, PostgresEventStore]]:
    """The stores of SCHEMAS in ``database``."""
    opened = {schema: PostgresEventStore(database, schema=schema) for schema in SCHEMAS}
    yield opened
    for store in opened.values():
        store.close()
