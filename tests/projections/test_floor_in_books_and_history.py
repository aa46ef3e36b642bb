"""The ledger's entries and the players' history on a table the floor ran (issue 18):
new settings (stakes and timers) given during a hand hold from the next one, a player
sat out and one removed by the floor, and the table closed by an operator during a
hand: every seat cashed out (PlayerLeft, reason table_closed), then TableClosed.
Both fold every event without error, the books hold every chip, the history's rows
carry the stakes each hand was played at."""

from __future__ import annotations

from collections import defaultdict

import msgspec
import pytest
from studroom.domain.commands import CloseTable, ConfigureTable, RemovePlayer, SitOutPlayer, StartHand
from studroom.domain.config import Stakes
from studroom.domain.events import Event, HandEnded, HandStarted, PlayerLeft, TableClosed, TurnStarted
from studroom.domain.hands import turn_clock
from studroom.domain.simulate import FLOOR, SimulatedTable
from studroom.domain.table import Table
from studroom.projections.history.rows import TableState, follow, hand_rows
from studroom.projections.ledger import accounts
from studroom.projections.ledger.entries import CASH_OUT, TableBook, table_entries


def _play_out(sim: SimulatedTable) -> None:
    while (hand := sim.table.hand) is not None:
        turn = sim.table.last_turn
        assert turn is not None
        sim.answer(turn, hand)


@pytest.fixture(scope="module")
def closed_by_the_floor() -> list[Event]:
    sim = SimulatedTable("c1", "seven_card_stud", 6, seed=3)
    sim.play(3)
    sim.run(StartHand(seed="ab" * 32))
    stakes = Stakes(ante=10, small_bet=40, big_bet=80)
    sim.run(ConfigureTable(config=msgspec.structs.replace(sim.config, stakes=stakes, action_seconds=30)), FLOOR)
    _play_out(sim)
    players = [state.player for _, state in sorted(sim.table.seats.items())]
    sim.run(SitOutPlayer(player=players[0]), FLOOR)
    sim.play(2)
    sim.run(StartHand(seed="cd" * 32))
    sim.run(RemovePlayer(player=players[1]), FLOOR)
    sim.run(CloseTable(), FLOOR)
    _play_out(sim)
    assert sim.table.closed and isinstance(sim.events[-1], TableClosed)
    return sim.events


def test_R34_a_table_closed_by_an_operator_books_every_chip(closed_by_the_floor: list[Event]) -> None:
    events, book = closed_by_the_floor, TableBook()
    entries = [entry for event in events for entry in table_entries(book, "c1", event)]
    held: dict[str, int] = defaultdict(int)
    for entry in entries:
        held[entry.debit] += entry.amount
        held[entry.credit] -= entry.amount
    assert sum(held.values()) == 0
    assert not any(v for a, v in held.items() if accounts.class_of(a) in accounts.ON_TABLES)
    cashed = [e.cashed_out for e in events if isinstance(e, PlayerLeft) and e.cashed_out]
    assert sorted(cashed) == sorted(x.amount for x in entries if x.kind == CASH_OUT)
    reasons = {e.reason for e in events if isinstance(e, PlayerLeft)}
    assert {"removed", "table_closed"} <= reasons


def test_the_floors_new_timers_date_the_entries_from_the_next_hand(closed_by_the_floor: list[Event]) -> None:
    events, book = closed_by_the_floor, TableBook()
    for i, event in enumerate(events):
        table_entries(book, "c1", event)
        if isinstance(event, TurnStarted):
            config = Table.replay(events[:i]).config
            assert config is not None
            assert book.clock_ms == turn_clock(event, config)
    assert book.timers["act"] == 30


def test_R34_a_table_closed_by_an_operator_projects_its_hands_at_their_stakes(
        closed_by_the_floor: list[Event]) -> None:
    events, state = closed_by_the_floor, TableState()
    rows = []
    for version, event in enumerate(events, start=1):
        start = follow(state, version, event)
        if start is not None:
            rows += hand_rows(state, events[start - 1:version], version)
    ended = [i for i, e in enumerate(events) if isinstance(e, HandEnded)]
    assert len({(r.table_id, r.hand_no) for r in rows}) == len(ended)
    for row in rows:
        start = next(i for i, e in enumerate(events) if isinstance(e, HandStarted) and e.hand_no == row.hand_no
                     and any(isinstance(x, HandEnded) and x.hand_no == row.hand_no for x in events[i:]))
        config = Table.replay(events[:start]).config
        assert config is not None
        assert (row.small_bet, row.big_bet, row.ante) == (config.stakes.small_bet, config.stakes.big_bet,
                                                         config.stakes.ante)
        assert row.record.config == config
    assert {(r.small_bet, r.ante) for r in rows} == {(20, 5), (40, 10)}
    assert not state.seated and state.hand_start is None
