"""``studroom history hands`` says when its list does not hold all the player's hands
(issue 22: it stopped at 50 rows without a word)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from studroom.domain.hands import spans
from studroom.domain.simulate import SimulatedTable
from studroom.services.cli.main import main
from studroom.services.store.layout import store_schema
from studroom.services.store.postgres import PostgresEventStore

pytestmark = pytest.mark.integration

HANDS = 12


@pytest.fixture
def room_db(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A database of its own holding one table of ``HANDS`` hands in one store; the
    player of seat 0 of its first hand, named by STUDROOM_DATABASE_URL."""
    name = f"history_cli_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = database_url.rsplit("/", 1)[0] + "/" + name
    events = SimulatedTable("t01", "seven_card_stud", 6, seed=3).play(HANDS)
    store = PostgresEventStore(url, schema=store_schema(0))
    try:
        store.append([("t01", 0, events)])
    finally:
        store.close()
    monkeypatch.setenv("STUDROOM_DATABASE_URL", url)
    yield events[spans(events)[0].start].seats[0].player  # type: ignore[attr-defined]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_a_cut_list_of_hands_says_how_many_there_are(room_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    player = room_db
    assert main(["history", "hands", player]) == 0
    whole = capsys.readouterr()
    stored = sum(1 for line in whole.out.splitlines() if " t01 " in line)
    assert stored > 3 and whole.err == ""             # all of them: nothing to say

    assert main(["history", "hands", player, "--limit", "3"]) == 0
    cut = capsys.readouterr()
    assert sum(1 for line in cut.out.splitlines() if " t01 " in line) == 3
    assert cut.err.strip() == f"studroom history: the latest 3 of {stored} hands (--limit {stored} shows more)"
