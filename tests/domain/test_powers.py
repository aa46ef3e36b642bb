"""Who may give which command (domain/authority.py, through ``Table.execute(by=...)``):
every command a role may not give is refused as ``forbidden`` and changes nothing."""

from __future__ import annotations

from itertools import count

import msgspec
import pytest

from studroom.domain.authority import Sender
from studroom.domain.commands import (
    Act, BuyIn, Command, DealStreet, Leave, Muck, OpenTable, PostAnte, Show, SitDown, SitOut, SkipAnte,
    StartHand, Timeout,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import FORBIDDEN, UNKNOWN_SEAT, DomainError
from studroom.domain.events import Acted, ChipsBought, PlayerSatDown, SitOutChanged, TimedOut, TurnStarted
from studroom.domain.table import Table

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
CONFIG = TableConfig(game="seven_card_stud", stakes=STAKES)
SEED = "cd" * 32
IDS = count(1)

FLOOR = Sender("operator", "floor")
TIMER = Sender("service", "timer")
CASHIER = Sender("service", "cashier")


def player(seat: int) -> Sender:
    return Sender("player", f"p{seat}")


def numbered(command: Command) -> Command:
    """The command as a sender sends it: with the next command id."""
    return msgspec.structs.replace(command, command_id=str(next(IDS)))


def between_hands(players: int = 2, auto_deal: bool = True) -> Table:
    """A table with players seated and bought in, no hand yet (set up by the room itself)."""
    table = Table()
    table.execute(OpenTable(table_id="t1", config=TableConfig(game="seven_card_stud", stakes=STAKES,
                                                              auto_deal=auto_deal)))
    for seat in range(players):
        table.execute(SitDown(seat=seat, player=f"p{seat}"))
        table.execute(BuyIn(seat=seat, amount=1000))
    return table


def table_in_hand() -> tuple[Table, TurnStarted]:
    """Three players; the first betting round waits for the bring-in."""
    table = between_hands(3)
    events = table.execute(StartHand(seed=SEED))
    turn = next(e for e in reversed(events) if isinstance(e, TurnStarted))
    return table, turn


def refused(table: Table, command: Command, by: Sender, code: str = FORBIDDEN) -> None:
    before = table.state()
    with pytest.raises(DomainError) as caught:
        table.execute(numbered(command), by=by)
    assert caught.value.code == code, caught.value
    assert table.state() == before


NOT_A_PLAYERS = [
    OpenTable(table_id="t1", config=CONFIG),
    BuyIn(seat=0, amount=100),
    StartHand(seed=SEED),
    StartHand(),
    DealStreet(),
    Timeout(turn=1),
]


@pytest.mark.parametrize("command", NOT_A_PLAYERS, ids=lambda c: type(c).__name__)
def test_a_player_may_not_open_credit_chips_start_deal_or_time_out(command: Command):
    table, _ = table_in_hand()
    refused(table, command, player(0))


def test_R20_a_player_may_not_time_out_the_turn_even_his_own():
    table, turn = table_in_hand()
    refused(table, Timeout(turn=turn.turn, seat=turn.seat), player(turn.seat))


def test_R3_a_player_may_not_buy_in_for_himself():
    table, _ = table_in_hand()
    table.execute(SitDown(seat=5, player="p5"))
    refused(table, BuyIn(seat=5, amount=200), player(5))


def test_R32_a_player_may_not_start_a_hand_with_his_seed_or_deck():
    table = between_hands()
    refused(table, StartHand(seed=SEED), player(0))
    refused(table, StartHand(deck=["As", "Ks", "Qs"]), player(1))


def seat_commands(seat: int) -> list[Command]:
    return [PostAnte(seat=seat), SkipAnte(seat=seat), Act(seat=seat, action="bring_in"), Show(seat=seat),
            Muck(seat=seat), SitOut(seat=seat), Leave(seat=seat)]


@pytest.mark.parametrize("index", range(len(seat_commands(0))), ids=[type(c).__name__ for c in seat_commands(0)])
def test_a_player_gives_seat_commands_only_for_his_own_seat(index: int):
    table, turn = table_in_hand()
    other = (turn.seat + 1) % 3
    refused(table, seat_commands(turn.seat)[index], player(other))     # another player's seat
    refused(table, seat_commands(7)[index], player(other))             # an empty seat


def test_a_players_own_seat_commands_are_carried_out():
    table, turn = table_in_hand()
    events = table.execute(numbered(Act(seat=turn.seat, action="bring_in")), by=player(turn.seat))
    assert isinstance(events[0], Acted) and events[0].seat == turn.seat
    waiting = next(s for s in range(3) if s != turn.seat)
    assert isinstance(table.execute(numbered(SitOut(seat=waiting)), by=player(waiting))[0], SitOutChanged)


def test_a_player_sits_down_only_as_himself():
    table, _ = table_in_hand()
    refused(table, SitDown(seat=5, player="p6"), player(5))
    events = table.execute(numbered(SitDown(seat=5, player="p5")), by=player(5))
    assert isinstance(events[0], PlayerSatDown) and events[0].player == "p5"


NOT_AN_OPERATORS = [SitDown(seat=5, player="floor"), PostAnte(seat=0), SkipAnte(seat=0),
                    Act(seat=0, action="fold"), Show(seat=0), Muck(seat=0), Timeout(turn=1)]


@pytest.mark.parametrize("command", NOT_AN_OPERATORS, ids=lambda c: type(c).__name__)
def test_an_operator_may_not_play_a_seat_or_time_out(command: Command):
    table, _ = table_in_hand()
    refused(table, command, FLOOR)


def test_R3_an_operator_seats_a_player_out_or_away_but_credits_no_chips():
    table, turn = table_in_hand()
    table.execute(SitDown(seat=5, player="p5"))
    refused(table, BuyIn(seat=5, amount=200), FLOOR)                      # money moves through the cashier
    waiting = next(s for s in range(3) if s != turn.seat)
    assert table.execute(numbered(SitOut(seat=waiting)), by=FLOOR)
    assert table.execute(numbered(Leave(seat=5)), by=FLOOR)


def test_R32_an_operator_never_starts_an_online_tables_hand():
    table = between_hands()
    refused(table, StartHand(seed=SEED), FLOOR)
    refused(table, StartHand(), FLOOR)


def test_R28_an_operator_starts_and_deals_a_live_dealers_hand_without_seed_or_deck():
    table = between_hands(auto_deal=False)
    refused(table, StartHand(seed=SEED), FLOOR)
    refused(table, StartHand(deck=[]), FLOOR)
    assert table.execute(numbered(StartHand()), by=FLOOR)
    cards = ["2c", "3c", "4c", "5c", "6c", "7c"]          # two down and the door card each
    assert table.execute(numbered(DealStreet(cards=cards)), by=FLOOR)


def test_R20_only_the_timer_times_out_a_turn():
    table, turn = table_in_hand()
    refused(table, Timeout(turn=turn.turn), CASHIER)
    refused(table, Timeout(turn=turn.turn), Sender("service", "relay"))
    events = table.execute(numbered(Timeout(turn=turn.turn)), by=TIMER)
    assert isinstance(events[0], TimedOut)


def test_services_have_exactly_their_own_command():
    table, turn = table_in_hand()
    table.execute(SitDown(seat=5, player="p5"))
    refused(table, BuyIn(seat=5, amount=200), TIMER)
    refused(table, Act(seat=turn.seat, action="bring_in"), TIMER)
    refused(table, StartHand(seed=SEED), Sender("service", "table"))   # its own starts are trusted, not sent
    assert isinstance(table.execute(numbered(BuyIn(seat=5, amount=200, player="p5")), by=CASHIER)[0], ChipsBought)


def test_R3_the_cashiers_buy_in_names_the_player_it_debited():
    """Issue 16: mallory paid, so the chips go only into mallory's own seat."""
    table = between_hands(2)
    refused(table, numbered(BuyIn(seat=1, amount=200)), CASHIER)                 # no player: forbidden
    refused(table, numbered(BuyIn(seat=1, amount=200, player="p0")), CASHIER)    # p1's seat, p0 paid
    refused(table, numbered(BuyIn(seat=7, amount=200, player="p0")), CASHIER, UNKNOWN_SEAT)
    events = table.execute(numbered(BuyIn(seat=1, amount=200, player="p1")), by=CASHIER)   # a top-up: his own
    assert isinstance(events[0], ChipsBought) and table.seats[1].stack == 1200


def test_R3_a_trusted_buy_in_names_its_player_or_nobody():
    """The room's own callers (scripted hands, old records re-run) may leave the player out;
    named, he must hold the seat like any sender's."""
    table = between_hands(2)
    table.execute(BuyIn(seat=0, amount=100))
    before = table.state()
    with pytest.raises(DomainError) as caught:
        table.execute(BuyIn(seat=0, amount=100, player="p1"))
    assert caught.value.code == FORBIDDEN and table.state() == before


@pytest.mark.parametrize("name", ["", "Zoë", "p0.x", "x" * 65, "p0\n"])
def test_a_sender_whose_name_is_no_name_is_forbidden(name: str):
    table, turn = table_in_hand()
    refused(table, Act(seat=turn.seat, action="bring_in"), Sender("player", name))
    refused(table, BuyIn(seat=0, amount=100), Sender("operator", name))


@pytest.mark.parametrize("command", [Act(seat=0, action="fold"), SitOut(seat=0), BuyIn(seat=0, amount=100),
                                     OpenTable(table_id="t1", config=CONFIG)], ids=lambda c: type(c).__name__)
def test_a_spectator_sends_nothing(command: Command):
    table, _ = table_in_hand()
    refused(table, command, Sender("spectator", "public"))  # type: ignore[arg-type]
