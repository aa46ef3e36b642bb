"""R34, absent players: a timed-out turn sits the player out from the next hand on (no
ante, auto-post included; no cards) until he sits in himself; sat out past the table's
limit he is removed and cashed out, when a hand ends or when the pause a table opens
for it ends (``next_pause_due``: the table has no clock, the timer ends the pause)."""

from __future__ import annotations

import msgspec
import pytest

from studroom.domain import snapshot
from studroom.domain.commands import (
    Act, BuyIn, Command, OpenTable, PauseTable, PostAnte, ScheduleHand, Show, SitDown, SitOut, StartHand, Timeout,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import NO_HAND, NOT_ENOUGH_PLAYERS, DomainError
from studroom.domain.events import (
    AnteSkipped, HandEnded, HandStarted, PauseEnded, PauseStarted, PlayerLeft, SitOutChanged, TimedOut,
)
from studroom.domain.table import Table
from studroom.domain.views import table_view

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
LIMIT_S = 60
CONFIG = TableConfig(game="seven_card_stud", stakes=STAKES, sit_out_seconds=LIMIT_S)
SEED = "ab" * 32
T0 = 1_000_000


class Played:
    """A table and its whole stream, so every test can replay it."""

    def __init__(self, players: int, auto_ante: bool = True) -> None:
        self.table = Table()
        self.log: list = []
        self.run(OpenTable(table_id="t1", config=CONFIG))
        for s in range(players):
            self.run(SitDown(seat=s, player=f"p{s}", auto_ante=auto_ante))
            self.run(BuyIn(seat=s, amount=1000))

    def run(self, command: Command, now_ms: int = T0) -> list:
        events = self.table.execute(msgspec.structs.replace(command, now_ms=now_ms))
        self.log += events
        return events

    def play_out(self, now_ms: int = T0) -> list:
        """Everybody left checks or calls, and shows."""
        events: list = []
        while self.table.hand is not None:
            turn = self.table.last_turn
            assert turn is not None and turn.seat is not None
            if turn.kind == "act":
                action = next(a for a in ("check", "call", "bring_in") if a in turn.options)
                events += self.run(Act(seat=turn.seat, action=action), now_ms)  # type: ignore[arg-type]
            else:
                events += self.run(Show(seat=turn.seat), now_ms)
        return events

    def time_out_the_turn(self, now_ms: int = T0) -> tuple[int | None, list]:
        """The timer ends the open turn: whose it was (None: the ante window's), and what happened."""
        turn = self.table.last_turn
        assert turn is not None
        return turn.seat, self.run(Timeout(turn=turn.turn), now_ms)

    def check_replay(self) -> None:
        replayed = Table.replay(self.log)
        assert replayed.state() == self.table.state()
        assert snapshot.restore(snapshot.capture(self.table)).state() == self.table.state()


def test_R34_a_timed_out_player_is_sat_out_and_not_dealt_the_next_hand() -> None:
    room = Played(3)
    room.run(StartHand(seed=SEED))
    deadline = room.table.last_turn.deadline_ms                   # type: ignore[union-attr]
    seat, events = room.time_out_the_turn(deadline + 150)         # the timer is a little late
    assert [type(e) for e in events[:2]] == [TimedOut, SitOutChanged]
    # out since the turn's deadline: a recorded fact, so a re-run of the record agrees (R20)
    assert events[1] == SitOutChanged(seat=seat, sitting_out=True, reason="timed_out", since_ms=deadline)
    room.play_out()
    [started] = [e for e in room.run(StartHand(seed=SEED)) if type(e) is HandStarted]
    assert seat not in [s.seat for s in started.seats]            # no ante (auto-post too), no cards
    assert seat not in room.table.hand.players                    # type: ignore[union-attr]
    view = table_view(room.table, seat)
    mine = next(s for s in view.seats if s.seat == seat)
    assert mine.sitting_out and mine.sit_out_reason == "timed_out" and mine.sitting_out_since_ms == deadline
    room.check_replay()


def test_R34_the_ante_window_timing_out_sits_out_who_did_not_post() -> None:
    room = Played(3, auto_ante=False)
    room.run(StartHand(seed=SEED))
    room.run(PostAnte(seat=0))
    room.run(PostAnte(seat=1))
    _, events = room.time_out_the_turn()
    assert [type(e) for e in events[:2]] == [AnteSkipped, SitOutChanged]
    assert room.table.seats[2].sitting_out
    room.check_replay()


def test_R34_he_is_dealt_again_once_he_sits_in_himself() -> None:
    room = Played(3)
    room.run(StartHand(seed=SEED))
    seat, _ = room.time_out_the_turn()
    room.play_out()
    [back] = room.run(SitOut(seat=seat, sitting_out=False))
    assert back == SitOutChanged(seat=seat, sitting_out=False, reason="own", since_ms=0)
    [started] = [e for e in room.run(StartHand(seed=SEED)) if type(e) is HandStarted]
    assert seat in [s.seat for s in started.seats]


DEADLINE = T0 + CONFIG.action_seconds * 1000     # of the first turn of a hand started at T0


def _heads_up_with_one_timed_out() -> tuple[Played, int | None]:
    """Two players; one times out (the turn's deadline: DEADLINE) and the hand is played out."""
    room = Played(2)
    room.run(StartHand(seed=SEED))
    seat, _ = room.time_out_the_turn(DEADLINE)
    room.play_out(DEADLINE + 1_000)
    return room, seat


def test_R34_fewer_than_two_not_sat_out_deal_nothing_and_the_pause_lasts_to_the_limit() -> None:
    room, seat = _heads_up_with_one_timed_out()
    table = room.table
    assert not table.next_hand_due() and table.next_pause_due()
    with pytest.raises(DomainError) as refused:
        table.execute(StartHand(seed=SEED))
    assert refused.value.code == NOT_ENOUGH_PLAYERS
    now = DEADLINE + 2_000
    [pause] = room.run(ScheduleHand(pause_ms=1_500), now)          # the service's pause_ms is not used
    expiry = DEADLINE + LIMIT_S * 1000
    assert pause == PauseStarted(turn=pause.turn, deadline_ms=expiry, pause_ms=expiry - now, purpose="sit_out_limit")
    assert not table.next_pause_due()                              # one timer: the pause's
    stack = table.seats[seat].stack
    events = room.run(Timeout(turn=pause.turn), pause.deadline_ms)
    assert events == [PauseEnded(turn=pause.turn),
                      PlayerLeft(seat=seat, player=f"p{seat}", cashed_out=stack, reason="sat_out_too_long")]
    assert seat not in table.seats and not table.next_pause_due() and not table.next_hand_due()
    room.check_replay()


def test_R34_a_timer_that_fires_early_removes_nobody_and_the_pause_opens_again() -> None:
    room, seat = _heads_up_with_one_timed_out()
    [pause] = room.run(ScheduleHand(pause_ms=1_500), DEADLINE + 2_000)
    assert room.run(Timeout(turn=pause.turn), pause.deadline_ms - 5) == [PauseEnded(turn=pause.turn)]
    assert seat in room.table.seats and room.table.next_pause_due()
    [again] = room.run(ScheduleHand(pause_ms=1_500), pause.deadline_ms - 4)
    assert again.deadline_ms == pause.deadline_ms and again.pause_ms == 4


def test_R34_sitting_in_during_the_pause_ends_it_and_a_hand_is_due_at_once() -> None:
    room, seat = _heads_up_with_one_timed_out()
    [pause] = room.run(ScheduleHand(pause_ms=1_500), DEADLINE + 2_000)
    events = room.run(SitOut(seat=seat, sitting_out=False), DEADLINE + 3_000)
    assert [type(e) for e in events] == [SitOutChanged, PauseEnded]
    assert room.table.next_hand_due()
    with pytest.raises(DomainError) as late:
        room.table.execute(Timeout(turn=pause.turn))              # the timer's, for the pause now over
    assert late.value.code == NO_HAND
    room.check_replay()


def test_R34_at_a_table_that_deals_on_a_sit_out_past_the_limit_is_removed_when_a_hand_ends() -> None:
    room = Played(3)
    room.run(StartHand(seed=SEED))
    seat, _ = room.time_out_the_turn(DEADLINE)
    room.play_out(DEADLINE + 1_000)
    assert room.table.next_hand_due() and not room.table.next_pause_due()
    room.run(StartHand(seed=SEED), DEADLINE + 2_000)
    end = room.play_out(DEADLINE + LIMIT_S * 1000)
    assert [type(e) for e in end[-2:]] == [HandEnded, PlayerLeft]
    assert end[-1].seat == seat and end[-1].reason == "sat_out_too_long"
    room.check_replay()


def test_R34_a_paused_table_opens_no_pause_for_sit_outs() -> None:
    room, _ = _heads_up_with_one_timed_out()
    room.run(PauseTable())
    assert not room.table.next_pause_due()
