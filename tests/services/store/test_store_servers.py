"""Where each event store lives (services/store/servers.py): the setting, the record on
the home server, and a reader that does not know a store's server (one line naming the
fix).  The two-server room: test_stores_on_two_servers.py."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from studroom.services.runtime.settings import (
    STORE_URLS_VAR,
    Settings,
    format_store_urls,
    parse_store_urls,
)
from studroom.services.store.inspect import open_reader, store_url
from studroom.services.store.layout import check_recorded_layout, store_schema
from studroom.services.store.servers import PLACEMENT_TABLE, Placement, StoreElsewhere, masked, server_id


def test_store_urls_are_read_written_and_checked() -> None:
    urls = parse_store_urls(" p1=postgresql://a@h1/db, 3=postgresql://b:pw@h2:5433/db ,")
    assert urls == ((1, "postgresql://a@h1/db"), (3, "postgresql://b:pw@h2:5433/db"))
    assert parse_store_urls(format_store_urls(urls)) == urls
    assert Settings.from_env({STORE_URLS_VAR: format_store_urls(urls)}).store_urls == urls
    assert Settings.from_env({}).store_urls == ()
    assert Settings(store_urls=urls).to_env({})[STORE_URLS_VAR] == format_store_urls(urls)
    with pytest.raises(ValueError, match=STORE_URLS_VAR):
        parse_store_urls("postgresql://h/db")                 # no store number
    with pytest.raises(ValueError, match=STORE_URLS_VAR):
        Settings(store_urls=((1, "mysql://h/db"),))
    assert masked("postgresql://user:secret@h:5433/db") == "postgresql://user@h:5433/db"


@pytest.mark.integration
def test_every_store_at_home_by_default_and_a_server_nobody_named_is_said(database_url: str) -> None:
    prefix = f"home{uuid.uuid4().hex[:6]}_p"
    where = check_recorded_layout(database_url, 2, prefix, urls={})
    assert where.urls == (database_url, database_url) and where.servers() == 1
    assert store_url(database_url, store_schema(1, prefix)) == database_url

    placed = f"away{uuid.uuid4().hex[:6]}_p"
    with psycopg.connect(database_url, autocommit=True) as conn:
        server_id(conn)
        check_recorded_layout(database_url, 2, placed, urls={})
        conn.execute(f"INSERT INTO public.{PLACEMENT_TABLE} (prefix, store, server, seen_at) "   # as if recorded
                     "VALUES (%s, 1, 'a-server-nobody-named', 'postgresql://x@db9/studroom')", (placed,))
    Placement.forget()                          # read again now, not within the 5 s readers take
    with pytest.raises(StoreElsewhere, match=f"db9.*{STORE_URLS_VAR}"):
        open_reader(database_url, store_schema(1, placed))
