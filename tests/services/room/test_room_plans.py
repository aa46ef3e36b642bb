"""The room's table plans: new tables in turn of the games, tables found in the store
reused with their players (whose bots look up their stacks). No servers."""

from __future__ import annotations

from studroom.domain.commands import BuyIn, OpenTable, SitDown
from studroom.domain.config import TableConfig
from studroom.domain.events import Event
from studroom.domain.games import GAMES
from studroom.domain.simulate import STAKES
from studroom.domain.table import Table
from studroom.services.room.plans import ROOM_GAMES, ROOM_RAKE, kept_beyond, plan_tables, table_ids


def _stored_table(table_id: str, buy_ins: dict[int, tuple[str, int]]) -> list[Event]:
    table = Table()
    config = TableConfig(game="five_card_stud", stakes=STAKES)
    events = table.execute(OpenTable(table_id=table_id, config=config))
    for seat, (player, amount) in buy_ins.items():
        events += table.execute(SitDown(seat=seat, player=player))
        events += table.execute(BuyIn(seat=seat, amount=amount))
    return events


def test_table_ids_are_numbered_and_as_wide_as_needed() -> None:
    assert table_ids(3) == ["t01", "t02", "t03"]
    assert table_ids(120, prefix="x")[-1] == "x120"
    assert table_ids(120, prefix="x")[0] == "x001"


def test_new_tables_take_the_games_in_turn_and_seat_the_bots() -> None:
    plans = plan_tables(table_ids(4), 3, {})
    assert [p.config.game for p in plans] == [*ROOM_GAMES, ROOM_GAMES[0]]
    assert all(p.config.rake == ROOM_RAKE and p.config.stakes == STAKES for p in plans)
    assert plans[0].seats == {0: "t01-p0", 1: "t01-p1", 2: "t01-p2"}
    assert all(p.kept == set() for p in plans)


def test_never_more_bots_than_the_game_seats_R2() -> None:
    for plan in plan_tables(table_ids(3), 20, {}):
        config = plan.config
        assert len(plan.seats) == min(config.seat_count, GAMES[config.game].max_seats)


def test_a_stored_table_keeps_its_config_and_players() -> None:
    events = _stored_table("t01", {2: ("alice", 500), 5: ("bob", 700)})
    [plan] = plan_tables(["t01"], 3, {"t01": events})
    assert plan.config.game == "five_card_stud"          # its own, not the room's first game
    assert plan.seats == {0: "t01-p0", 2: "alice", 5: "bob"}
    assert plan.kept == {2, 5}
    assert plan.reused and not plan_tables(["t02"], 3, {})[0].reused    # a reused table is not opened again


def test_every_player_of_a_stored_table_gets_a_bot_even_beyond_bots_per_table() -> None:
    events = _stored_table("t01", {2: ("alice", 500), 5: ("bob", 700)})
    [plan] = plan_tables(["t01"], 1, {"t01": events})
    assert plan.seats == {2: "alice", 5: "bob"}


def test_only_tables_that_keep_more_players_than_asked_are_named() -> None:
    events = _stored_table("t01", {2: ("alice", 500), 5: ("bob", 700)})
    plans = plan_tables(["t01", "t02"], 1, {"t01": events})
    assert kept_beyond(plans, 2) is None
    note = kept_beyond(plans, 1)
    assert note is not None and "t01 (2)" in note and "t02" not in note
