"""R5 and R20 for the pause before an online table's next hand: ``ScheduleHand`` opens
it as a turn of its own (``PauseStarted``), only the timer's ``Timeout`` naming that turn
ends it (``PauseEnded``), and then the hand is due at once."""

from __future__ import annotations

import random

import pytest

from studroom.domain.authority import Sender
from studroom.domain.commands import BuyIn, Leave, OpenTable, ScheduleHand, SitDown, StartHand, Timeout
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import (
    BAD_CONFIG, FORBIDDEN, HAND_IN_PROGRESS, NO_CHANGE, NO_HAND, NOT_ENOUGH_PLAYERS, NOT_YOUR_TURN, STALE_TIMEOUT,
    DomainError,
)
from studroom.domain.events import PauseEnded, PauseStarted
from studroom.domain.simulate import play_hand
from studroom.domain.table import MAX_PAUSE_MS, Table

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
SEED = "ab" * 32
NOW = 1_000_000
TIMER = Sender("service", "timer")
_ids = iter(range(1, 1_000_000))


def timeout(turn: int, seat: int | None = None) -> Timeout:
    """The timer's Timeout, numbered like its client numbers them."""
    return Timeout(turn=turn, seat=seat, command_id=str(next(_ids)))


def ready_table(players: int = 2) -> tuple[Table, list]:
    table = Table()
    log = table.execute(OpenTable(table_id="t1", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    for s in range(players):
        log += table.execute(SitDown(seat=s, player=f"p{s}"))
        log += table.execute(BuyIn(seat=s, amount=1000))
    return table, log


def code(table: Table, command: object, by: Sender | None = None) -> str:
    before = table.state()
    with pytest.raises(DomainError) as refused:
        table.execute(command, by=by)  # type: ignore[arg-type]
    assert table.state() == before                     # a refusal changes nothing
    return refused.value.code


def test_R5_a_pause_is_a_turn_that_holds_the_next_hand_back() -> None:
    table, _ = ready_table()
    assert table.next_hand_due() and not table.pause_served
    [started] = table.execute(ScheduleHand(pause_ms=1500, now_ms=NOW))
    assert started == PauseStarted(turn=1, deadline_ms=NOW + 1500, pause_ms=1500)
    assert table.turn == table.pause_turn == 1
    assert not table.next_hand_due()                   # not while the pause runs
    assert code(table, ScheduleHand(pause_ms=1500, now_ms=NOW)) == NO_CHANGE


def test_R20_only_the_timeout_of_the_pause_ends_it() -> None:
    table, _ = ready_table()
    table.execute(ScheduleHand(pause_ms=500, now_ms=NOW))
    assert code(table, timeout(2), TIMER) == STALE_TIMEOUT
    assert code(table, timeout(1, 0), TIMER) == NOT_YOUR_TURN
    [ended] = table.execute(timeout(1), by=TIMER)
    assert isinstance(ended, PauseEnded) and ended.turn == 1
    assert table.pause_turn is None and table.pause_served and table.next_hand_due()
    assert code(table, timeout(1), TIMER) == NO_HAND          # the pause is over: stale (R20)


def test_R5_a_started_hand_needs_a_new_pause_after_it() -> None:
    table, _ = ready_table()
    table.execute(ScheduleHand(pause_ms=500, now_ms=NOW))
    table.execute(timeout(1), by=TIMER)
    table.execute(StartHand(seed=SEED, now_ms=NOW))
    assert not table.pause_served and table.hand is not None
    assert code(table, ScheduleHand(pause_ms=500)) == HAND_IN_PROGRESS
    while table.hand is not None:                      # everybody times out: the hand ends
        table.execute(timeout(table.turn), by=TIMER)
    play_hand(table, random.Random(3))
    assert table.next_hand_due() and not table.pause_served
    [started] = table.execute(ScheduleHand(pause_ms=500, now_ms=NOW))
    assert isinstance(started, PauseStarted) and started.turn == table.turn


def test_R5_a_pause_ended_without_players_leaves_the_hand_due_when_they_come() -> None:
    table, _ = ready_table()
    table.execute(ScheduleHand(pause_ms=500, now_ms=NOW))
    table.execute(Leave(seat=1))
    table.execute(timeout(1), by=TIMER)
    assert not table.next_hand_due() and table.pause_served
    table.execute(SitDown(seat=2, player="p2"))
    table.execute(BuyIn(seat=2, amount=1000))
    assert table.next_hand_due() and table.pause_served            # served: no second pause


def test_R5_no_pause_without_a_due_hand_or_with_a_bad_length() -> None:
    table, _ = ready_table(players=1)
    assert code(table, ScheduleHand(pause_ms=500)) == NOT_ENOUGH_PLAYERS
    table, _ = ready_table()
    for bad in (0, -1, MAX_PAUSE_MS + 1):
        assert code(table, ScheduleHand(pause_ms=bad)) == BAD_CONFIG


def test_only_the_table_service_itself_opens_a_pause() -> None:
    table, _ = ready_table()
    for who in (Sender("player", "p0"), Sender("operator", "floor"), TIMER, Sender("service", "cashier")):
        assert code(table, ScheduleHand(pause_ms=500), who) == FORBIDDEN


def test_a_pause_replays_to_the_same_table() -> None:
    table, log = ready_table()
    log += table.execute(ScheduleHand(pause_ms=500, now_ms=NOW))
    assert Table.replay(log).state() == table.state()
    log += table.execute(timeout(1), by=TIMER)
    assert Table.replay(log).state() == table.state()
