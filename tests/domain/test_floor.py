"""The floor's table commands (an operator's, domain/authority.py): configure, pause,
resume, close a table; sit a player out or remove him by name (R34).  Each is an event
on the table's stream; a refusal has its code and changes nothing."""

from __future__ import annotations

from itertools import count

import msgspec
import pytest

from studroom.domain.authority import Sender
from studroom.domain.commands import (
    Act, BuyIn, CloseTable, Command, ConfigureTable, Leave, OpenTable, PauseTable, RemovePlayer,
    ResumeTable, ScheduleHand, Show, SitDown, SitOut, SitOutPlayer, StartHand, Timeout,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import (
    BAD_CONFIG, BAD_STAKES, FORBIDDEN, NO_CHANGE, NOT_ENOUGH_PLAYERS, TABLE_CLOSED, UNKNOWN_PLAYER, DomainError,
)
from studroom.domain.events import (
    HandEnded, LeaveRequested, PlayerLeft, SitOutChanged, TableClosed, TableClosing, TableConfigured, TablePaused,
    TableResumed,
)
from studroom.domain.table import Table
from studroom.domain.views import table_view

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
CONFIG = TableConfig(game="seven_card_stud", stakes=STAKES)
SEED = "ab" * 32
FLOOR = Sender("operator", "floor")
IDS = count(1)


def by_floor(table: Table, command: Command) -> list:
    return table.execute(msgspec.structs.replace(command, command_id=str(next(IDS))), by=FLOOR)


def refused(table: Table, command: Command, by: Sender | None = FLOOR) -> str:
    before = table.state()
    with pytest.raises(DomainError) as e:
        table.execute(msgspec.structs.replace(command, command_id=str(next(IDS)) if by else None), by=by)
    assert table.state() == before                     # a refusal changes nothing
    return e.value.code


def seated(players: int = 3) -> Table:
    table = Table()
    table.execute(OpenTable(table_id="t1", config=CONFIG))
    for s in range(players):
        table.execute(SitDown(seat=s, player=f"p{s}"))
        table.execute(BuyIn(seat=s, amount=1000))
    return table


def in_hand(players: int = 3) -> Table:
    table = seated(players)
    table.execute(StartHand(seed=SEED))
    assert table.hand is not None and table.hand.phase == "betting"
    return table


def play_out(table: Table) -> list:
    """Everybody calls or checks to the end of the hand, and shows."""
    events: list = []
    while table.hand is not None:
        turn = table.last_turn
        assert turn is not None and turn.seat is not None
        if turn.kind == "act":
            action = next(a for a in ("check", "call", "bring_in") if a in turn.options)
            events += table.execute(Act(seat=turn.seat, action=action))  # type: ignore[arg-type]
        else:
            events += table.execute(Show(seat=turn.seat))
    return events


@pytest.mark.parametrize("command", [
    ConfigureTable(config=CONFIG), PauseTable(), ResumeTable(), CloseTable(), SitOutPlayer(player="p1"),
    RemovePlayer(player="p1"),
])
def test_only_an_operator_gives_the_floors_commands(command: Command) -> None:
    table = seated()
    assert refused(table, command, Sender("player", "p1")) == FORBIDDEN
    assert refused(table, command, Sender("service", "timer")) == FORBIDDEN


def test_configure_between_hands_holds_at_once() -> None:
    table = seated()
    new = msgspec.structs.replace(CONFIG, stakes=Stakes(ante=10, small_bet=40, big_bet=80), action_seconds=20)
    [configured] = by_floor(table, ConfigureTable(config=new))
    assert type(configured) is TableConfigured and configured.config == new
    assert table.config == new and table.next_config is None
    assert refused(table, ConfigureTable(config=new)) == NO_CHANGE


def test_configure_during_a_hand_holds_from_the_next_hand() -> None:
    table = in_hand()
    new = msgspec.structs.replace(CONFIG, stakes=Stakes(ante=10, small_bet=40, big_bet=80))
    [configured] = by_floor(table, ConfigureTable(config=new))
    assert type(configured) is TableConfigured and configured.config == new
    assert table.config == CONFIG and table.next_config == new
    assert table_view(table, None).next_config == new
    play_out(table)
    assert table.config == new and table.next_config is None
    events = table.execute(StartHand(seed=SEED))
    assert [e.amount for e in events if type(e).__name__ == "AntePosted"] == [10, 10, 10]


@pytest.mark.parametrize(("change", "code"), [
    ({"game": "five_card_stud"}, BAD_CONFIG),
    ({"seats": 8}, BAD_CONFIG),
    ({"auto_deal": False}, BAD_CONFIG),
    ({"stakes": Stakes(small_bet=20, big_bet=10)}, BAD_STAKES),
    ({"action_seconds": 0}, BAD_CONFIG),
    ({"sit_out_seconds": 0}, BAD_CONFIG),
])
def test_configure_is_validated_as_open_table_is(change: dict, code: str) -> None:
    table = seated()
    assert refused(table, ConfigureTable(config=msgspec.structs.replace(CONFIG, **change))) == code


def test_a_paused_table_finishes_its_hand_and_starts_no_other_until_resumed() -> None:
    table = in_hand()
    assert [type(e) for e in by_floor(table, PauseTable())] == [TablePaused]
    assert refused(table, PauseTable()) == NO_CHANGE
    assert table_view(table, None).state == "paused"
    ended = play_out(table)
    assert any(type(e) is HandEnded for e in ended)
    assert not table.next_hand_due() and not table.next_pause_due()
    assert refused(table, ScheduleHand(pause_ms=500), None) == NOT_ENOUGH_PLAYERS
    assert [type(e) for e in by_floor(table, ResumeTable())] == [TableResumed]
    assert refused(table, ResumeTable()) == NO_CHANGE
    assert table.next_hand_due()


def test_close_between_hands_cashes_every_seat_out_and_refuses_everything_after() -> None:
    table = seated()
    events = by_floor(table, CloseTable())
    assert [(type(e), getattr(e, "cashed_out", None)) for e in events] == [
        (PlayerLeft, 1000), (PlayerLeft, 1000), (PlayerLeft, 1000), (TableClosed, None)]
    assert {e.reason for e in events if type(e) is PlayerLeft} == {"table_closed"}
    assert not table.seats and table.closed and not table.next_hand_due()
    for command in (CloseTable(), ResumeTable(), SitOutPlayer(player="p1")):
        assert refused(table, command) == TABLE_CLOSED
    for command in (SitDown(seat=0, player="p9"), StartHand(seed=SEED), Timeout(turn=1)):
        assert refused(table, command, None) == TABLE_CLOSED
    assert table_view(table, None).state == "closed"


def test_close_mid_hand_closes_when_the_hand_ends_and_the_table_replays() -> None:
    table = in_hand()
    assert [type(e) for e in by_floor(table, CloseTable())] == [TableClosing]
    assert table_view(table, None).state == "closing"
    assert refused(table, CloseTable()) == NO_CHANGE
    assert refused(table, SitDown(seat=5, player="p5"), None) == TABLE_CLOSED
    end = play_out(table)
    names = [type(e).__name__ for e in end]
    assert names[-4:] == ["PlayerLeft", "PlayerLeft", "PlayerLeft", "TableClosed"]
    [ended] = [e for e in end if type(e) is HandEnded]
    assert {e.seat: e.cashed_out for e in end if type(e) is PlayerLeft} == ended.stacks
    assert table.closed and not table.seats


def test_a_closed_table_replays_to_the_same_state() -> None:
    table = Table()
    log = table.execute(OpenTable(table_id="t1", config=CONFIG))
    for s in range(2):
        log += table.execute(SitDown(seat=s, player=f"p{s}"))
        log += table.execute(BuyIn(seat=s, amount=1000))
    log += table.execute(StartHand(seed=SEED))
    log += by_floor(table, CloseTable())
    log += play_out(table)
    assert table.closed and Table.replay(log).state() == table.state()


def test_sit_out_player_by_name() -> None:
    table = seated()
    [changed] = by_floor(table, SitOutPlayer(player="p1", now_ms=5_000))
    assert changed == SitOutChanged(seat=1, sitting_out=True, reason="operator", since_ms=5_000,
                                    command_id=changed.command_id)
    assert refused(table, SitOutPlayer(player="p1")) == NO_CHANGE
    assert refused(table, SitOutPlayer(player="nobody")) == UNKNOWN_PLAYER
    view = table_view(table, 1).seats[1]
    assert view.sitting_out and view.sitting_out_since_ms == 5_000 and view.sit_out_reason == "operator"
    assert table.execute(SitOut(seat=1, sitting_out=False))          # he sits in himself
    assert table_view(table, 1).seats[1].sitting_out_since_ms is None


def test_remove_player_between_hands_cashes_him_out() -> None:
    table = seated()
    [left] = by_floor(table, RemovePlayer(player="p2"))
    assert (type(left), left.seat, left.cashed_out, left.reason) == (PlayerLeft, 2, 1000, "removed")
    assert refused(table, RemovePlayer(player="p2")) == UNKNOWN_PLAYER


def test_remove_player_mid_hand_folds_him_and_cashes_him_out_at_the_end() -> None:
    table = in_hand()
    hand = table.hand
    assert hand is not None
    seat = next(s for s in hand.order if s != hand.to_act)
    events = by_floor(table, RemovePlayer(player=f"p{seat}"))
    assert type(events[0]) is LeaveRequested and events[0].reason == "removed"
    assert hand.players[seat].folded
    end = play_out(table)
    [left] = [e for e in end if type(e) is PlayerLeft]
    assert (left.seat, left.reason) == (seat, "removed")


def test_the_operator_may_still_use_seat_commands() -> None:
    table = seated()
    assert by_floor(table, SitOut(seat=0))
    assert by_floor(table, Leave(seat=0))
