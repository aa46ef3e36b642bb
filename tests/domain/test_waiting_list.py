"""The waiting list (domain/waiting_list.py, docs/rules.md "The waiting list"): a player
joins as himself; a seat that frees is offered to the first, for the table's
``seat_offer_seconds``; only he may take it; an offer that passes (checked when a pause
or a hand ends: the one timer per table) takes him off the list and the next is offered.
A refusal has its code and changes nothing; a replay rebuilds the same table."""

from __future__ import annotations

from itertools import count

import msgspec
import pytest

from studroom.domain import snapshot, views
from studroom.domain.authority import Sender
from studroom.domain.commands import (
    Act, BuyIn, CloseTable, Command, JoinWaitingList, Leave, LeaveWaitingList, OpenTable, RemovePlayer,
    ScheduleHand, SitDown, StartHand, Timeout,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import (
    ALREADY_SEATED, ALREADY_WAITING, FORBIDDEN, NOT_WAITING, SEAT_OFFERED, TABLE_CLOSED, TABLE_NOT_OPEN, DomainError,
)
from studroom.domain.events import (
    Event, PauseEnded, PauseStarted, PlayerLeft, PlayerSatDown, SeatOffered, WaitingListJoined, WaitingListLeft,
)
from studroom.domain.table import Table

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
OFFER_S = 30
CONFIG = TableConfig(game="seven_card_stud", stakes=STAKES, seats=3, seat_offer_seconds=OFFER_S)
SEED = "cd" * 32
FLOOR = Sender("operator", "floor")
T0 = 1_000_000
IDS = count(1)


class Room:
    """A full three-seat table (p0..p2) and its whole stream, for the replay check."""

    def __init__(self) -> None:
        self.table = Table()
        self.stream: list[Event] = []
        self.run(OpenTable(table_id="t1", config=CONFIG))
        for s in range(3):
            self.run(SitDown(seat=s, player=f"p{s}"))
            self.run(BuyIn(seat=s, amount=1000))

    def run(self, command: Command, now: int = T0, by: Sender | None = None) -> list[Event]:
        if by is not None:
            command = msgspec.structs.replace(command, command_id=str(next(IDS)))
        events = self.table.execute(msgspec.structs.replace(command, now_ms=now), by=by)
        self.stream += events
        return events

    def join(self, player: str, now: int = T0) -> list[Event]:
        return self.run(JoinWaitingList(player=player), now, Sender("player", player))

    def refused(self, command: Command, by: Sender | None) -> str:
        before = self.table.state()
        with pytest.raises(DomainError) as e:
            self.run(command, T0, by)
        assert self.table.state() == before                     # a refusal changes nothing
        return e.value.code

    def check_replay(self) -> None:
        assert Table.replay(self.stream).state() == self.table.state()
        assert snapshot.restore(snapshot.capture(self.table)).state() == self.table.state()


def offer(player: str, seat: int, now: int = T0) -> SeatOffered:
    return SeatOffered(player=player, seat=seat, until_ms=now + OFFER_S * 1000)


def test_a_player_joins_the_list_of_a_full_table_and_sees_it_in_the_view() -> None:
    room = Room()
    assert [(type(e), e.player) for e in room.join("dan")] == [(WaitingListJoined, "dan")]
    room.join("eve")
    view = views.table_view(room.table, None)
    assert view.waiting == ["dan", "eve"] and view.offer is None
    room.check_replay()


def test_a_seat_that_frees_is_offered_to_the_first_waiting_and_only_he_may_take_it() -> None:
    room = Room()
    room.join("dan")
    room.join("eve")
    left = room.run(Leave(seat=1), T0 + 5)
    assert left[1:] == [offer("dan", 1, T0 + 5)]
    assert room.refused(SitDown(seat=1, player="eve"), Sender("player", "eve")) == SEAT_OFFERED
    assert room.refused(SitDown(seat=1, player="zed"), Sender("player", "zed")) == SEAT_OFFERED
    events = room.run(SitDown(seat=1, player="dan"), T0 + 6, Sender("player", "dan"))
    assert [type(e) for e in events] == [PlayerSatDown, WaitingListLeft]
    assert events[1].reason == "seated" and room.table.waiting == ["eve"] and room.table.offer is None
    room.check_replay()


def test_joining_a_table_with_a_free_seat_is_offered_it_at_once() -> None:
    room = Room()
    room.run(Leave(seat=2))
    assert room.join("dan")[1:] == [offer("dan", 2)]
    assert views.table_view(room.table, None).offer == offer("dan", 2)


def test_an_offer_passed_unanswered_takes_him_off_and_the_next_is_offered_by_the_tables_pause() -> None:
    room = Room()
    room.join("dan")
    room.join("eve")
    for seat in (0, 1):                  # one player left: no hand is due, the offer waits
        room.run(Leave(seat=seat))
    table = room.table
    assert table.offer == offer("dan", 0) and not table.next_hand_due() and table.next_pause_due()
    [pause] = room.run(ScheduleHand(pause_ms=2_000), T0 + 10)
    assert pause == PauseStarted(turn=pause.turn, deadline_ms=T0 + OFFER_S * 1000, pause_ms=OFFER_S * 1000 - 10,
                                 purpose="seat_offer")
    passed = room.run(Timeout(turn=pause.turn), pause.deadline_ms)
    assert passed == [PauseEnded(turn=pause.turn), WaitingListLeft(player="dan", reason="offer_passed"),
                      offer("eve", 0, pause.deadline_ms)]
    assert table.waiting == ["eve"] and table.next_pause_due()
    room.check_replay()


def test_while_a_hand_runs_the_offer_is_checked_when_the_hand_ends() -> None:
    room = Room()
    room.join("dan")
    room.join("eve")
    room.run(StartHand(seed=SEED), T0)
    room.run(Leave(seat=0), T0 + 1)          # mid-hand: folded, cashed out at the hand's end
    assert room.table.offer is None
    late = T0 + OFFER_S * 1000 + 1
    while room.table.hand is not None:       # the others play the hand out, late: fold where they may
        turn = room.table.last_turn
        assert turn is not None and turn.seat is not None
        action = next(a for a in ("fold", "check", "bring_in") if a in turn.options)
        events = room.run(Act(seat=turn.seat, action=action), late)  # type: ignore[arg-type]
    assert [type(e) for e in events][-2:] == [PlayerLeft, SeatOffered]   # offered at the hand's end
    assert room.table.offer == offer("dan", 0, late)
    room.check_replay()


def test_leaving_the_list_with_the_offer_passes_it_to_the_next() -> None:
    room = Room()
    room.join("dan")
    room.join("eve")
    room.run(Leave(seat=1))
    events = room.run(LeaveWaitingList(player="dan"), T0 + 7, Sender("player", "dan"))
    assert events[1:] == [offer("eve", 1, T0 + 7)]
    assert (events[0].player, events[0].reason) == ("dan", "own")
    room.check_replay()


def test_a_free_seat_is_kept_for_the_list_and_the_removed_players_seat_is_offered() -> None:
    room = Room()
    room.join("dan")
    events = room.run(RemovePlayer(player="p2"), T0, FLOOR)
    assert events[-1] == offer("dan", 2)


def test_refusals_have_their_codes() -> None:
    room = Room()
    room.join("dan")
    assert room.refused(JoinWaitingList(player="dan"), Sender("player", "dan")) == ALREADY_WAITING
    assert room.refused(JoinWaitingList(player="p0"), Sender("player", "p0")) == ALREADY_SEATED
    assert room.refused(LeaveWaitingList(player="eve"), Sender("player", "eve")) == NOT_WAITING
    assert room.refused(JoinWaitingList(player="eve"), Sender("player", "dan")) == FORBIDDEN
    assert room.refused(LeaveWaitingList(player="dan"), FLOOR) == FORBIDDEN
    with pytest.raises(DomainError) as e:
        Table().execute(JoinWaitingList(player="dan"))
    assert e.value.code == TABLE_NOT_OPEN


def test_closing_the_table_empties_the_list_and_a_closed_table_takes_no_one() -> None:
    room = Room()
    room.join("dan")
    events = room.run(CloseTable(), T0, FLOOR)
    assert WaitingListLeft(player="dan", reason="table_closed") in events and room.table.waiting == []
    assert room.refused(JoinWaitingList(player="eve"), Sender("player", "eve")) == TABLE_CLOSED
    room.check_replay()


def test_the_offer_goes_privately_to_its_player_and_holds_no_secret() -> None:
    event = offer("dan", 1)
    assert views.addressee(event) == ("dan", 1)
    assert views.public(event) == event
    assert views.addressee(WaitingListJoined(player="dan")) is None
