"""One store layout for the life of an installation (services/store/layout.py): the
first start records the number of stores, another number is refused in one line."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from studroom.domain.commands import OpenTable
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.table import Table
from studroom.services.store.layout import (
    LAYOUT_TABLE,
    LayoutMismatch,
    check_recorded_layout,
    store_of_table,
    store_schema,
)
from studroom.services.store.postgres import PostgresEventStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

CONFIG = TableConfig(game="seven_card_stud", stakes=Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40))


@pytest.fixture
def prefix(database_url: str) -> Iterator[str]:
    """A prefix of store schemas of this test's own; forgotten afterwards."""
    name = f"lay_{uuid.uuid4().hex[:8]}_p"
    yield name
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DELETE FROM public.{LAYOUT_TABLE} WHERE prefix = %s", (name,))
        for j in range(2):
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(store_schema(j, name))))


def test_the_first_start_records_the_layout_and_another_is_refused(database_url: str, prefix: str) -> None:
    check_recorded_layout(database_url, 2, prefix)
    check_recorded_layout(database_url, 2, prefix)          # the same: runs
    with pytest.raises(LayoutMismatch) as refused:
        check_recorded_layout(database_url, 1, prefix)
    message = str(refused.value)
    assert "--stores 2" in message and "\n" not in message and "2 event store(s)" in message
    assert isinstance(refused.value, SystemExit)            # process.run: one line, exit 2


def test_stores_written_before_the_record_are_checked_first(database_url: str, prefix: str) -> None:
    table_id = next(f"t{k}" for k in range(100) if store_of_table(f"t{k}", 2) == 1)
    with PostgresEventStore(database_url, schema=store_schema(0, prefix)) as store:   # --stores 1
        store.append([(table_id, 0, Table().execute(OpenTable(table_id=table_id, config=CONFIG)))])
    with pytest.raises(LayoutMismatch, match="start with the number of stores"):
        check_recorded_layout(database_url, 2, prefix)
    check_recorded_layout(database_url, 1, prefix)          # what they were written with: recorded
    with pytest.raises(LayoutMismatch, match="--stores 1"):
        check_recorded_layout(database_url, 2, prefix)
