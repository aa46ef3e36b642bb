"""Asking the lobby, without servers: which entries answer a query, in what shape, and
the clear refusals of what is no query."""

from __future__ import annotations

import msgspec
import pytest
from lobby_tables import T0, entry_of, played
from studroom.domain.errors import UNKNOWN_GAME
from studroom.projections.lobby.activity import HOUR_MS
from studroom.projections.lobby.entry import LobbyEntry
from studroom.projections.lobby.queries import (
    MAX_QUERY_BYTES,
    BadQuery,
    LobbyQuery,
    answer,
    decode_answer,
    decode_query,
    encode_query,
    select,
)
from studroom.services.wire.protocol import BAD_REQUEST, UNKNOWN_TABLE


def tables() -> list[LobbyEntry]:
    """Three tables, one of each game, two hands played at each."""
    out = []
    for i, game in enumerate(("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")):
        entry = entry_of(played(game, players=3, hands=2, seed=i))
        out.append(msgspec.structs.replace(entry, table_id=f"t{i}"))
    return out


def test_every_table_by_id_without_the_running_hand() -> None:
    entries = tables()
    listed = select(reversed(entries), LobbyQuery(), T0)
    assert [e.table_id for e in listed] == ["t0", "t1", "t2"]
    assert all(e.hand is None and e.activity == [] for e in listed)
    assert [e.players for e in listed] == [e.players for e in entries]


def test_filtered_by_game_and_by_stakes() -> None:
    entries = tables()
    assert [e.table_id for e in select(entries, LobbyQuery(game="five_card_stud"), T0)] == ["t2"]
    assert len(select(entries, LobbyQuery(stakes="20/40"), T0)) == 3
    assert select(entries, LobbyQuery(game="seven_card_stud", stakes="10/20"), T0) == []


def test_one_table_with_its_hand_and_figures_as_of_the_answer() -> None:
    entries = tables()
    [one] = select(entries, LobbyQuery(table="t1"), T0 + 10 * 60_000)
    assert one.hand is not None and one.activity
    assert one.figures.hands_per_hour == one.hands
    [later] = select(entries, LobbyQuery(table="t1"), T0 + 3 * HOUR_MS)   # an idle table
    assert later.figures.hands_per_hour == 0 and later.figures.average_pot is None
    with pytest.raises(BadQuery) as refused:
        select(entries, LobbyQuery(table="t9"), T0)
    assert refused.value.code == UNKNOWN_TABLE


@pytest.mark.parametrize("data, code", [
    (b'{"game": 7}', BAD_REQUEST),
    (b'{"table": "a.b"}', BAD_REQUEST),
    (b'{"stakes": "20-40"}', BAD_REQUEST),
    (b'{"stakes": "20/40/80"}', BAD_REQUEST),
    (b'{"colour": "red"}', BAD_REQUEST),
    (b"not json", BAD_REQUEST),
    (b'{"game": "texas_holdem"}', UNKNOWN_GAME),
    (b'{"table": "' + b"x" * MAX_QUERY_BYTES + b'"}', BAD_REQUEST),
])
def test_what_is_no_query_is_refused_with_a_clear_code(data: bytes, code: str) -> None:
    with pytest.raises(BadQuery) as refused:
        decode_query(data)
    assert refused.value.code == code
    reply = decode_answer(answer(tables(), data, T0))
    assert not reply.ok and reply.error is not None and reply.error.code == code and not reply.tables


def test_an_empty_request_asks_for_every_table_and_queries_travel_as_json() -> None:
    assert decode_query(b"") == LobbyQuery()
    query = LobbyQuery(game="five_card_stud", stakes="20/40")
    assert decode_query(encode_query(query)) == query
    reply = decode_answer(answer(tables(), encode_query(LobbyQuery(table="t0")), T0))
    assert reply.ok and [e.table_id for e in reply.tables] == ["t0"]
