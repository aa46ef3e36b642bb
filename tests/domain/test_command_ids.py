"""Replay protection without a window (domain/command_ids.py): each sender's command ids
rise; a lower or equal one is refused for the life of the table, in bounded memory."""

from __future__ import annotations

import msgspec
import pytest

from studroom.domain.authority import Sender
from studroom.domain.command_ids import AHEAD_US, highest
from studroom.domain.commands import BuyIn, Command, Leave, OpenTable, SitDown, SitOut
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.errors import BAD_COMMAND_ID, DUPLICATE_COMMAND, DomainError
from studroom.domain.events import ChipsBought, PlayerSatDown, SitOutChanged, TableEvent
from studroom.domain.table import Table

CONFIG = TableConfig(game="seven_card_stud", stakes=Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40))
FLOOR = Sender("operator", "floor")
P0, P1 = Sender("player", "p0"), Sender("player", "p1")
CASHIER = Sender("service", "cashier")


def opened() -> tuple[Table, list]:
    """A table with p0 and p1 seated, set up by the room itself (no ids)."""
    table = Table()
    events = table.execute(OpenTable(table_id="t1", config=CONFIG))
    for seat in range(2):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}"))
    return table, events


def sit_out(seat: int, out: bool, command_id: str | None) -> SitOut:
    return SitOut(seat=seat, sitting_out=out, command_id=command_id)


def refused(table: Table, command: Command, by: Sender | None, code: str) -> None:
    before = table.state()
    with pytest.raises(DomainError) as caught:
        table.execute(command, by=by)
    assert caught.value.code == code, caught.value
    assert table.state() == before


def test_the_first_event_stores_the_senders_key_and_number():
    table, _ = opened()
    events = table.execute(sit_out(0, True, "1733000000000000"), by=P0)
    assert isinstance(events[0], SitOutChanged)
    assert events[0].command_id == "player.p0#1733000000000000"
    assert table.last_command_ids == {"player.p0": 1733000000000000}


def test_a_senders_command_needs_an_id():
    table, _ = opened()
    refused(table, sit_out(0, True, None), P0, BAD_COMMAND_ID)


@pytest.mark.parametrize("command_id", [
    "", "0", "-1", "01", "+1", " 1", "1 ", "1\n", "1.0", "1e3", "1_000", "0x10", "\u0661\u0662", "abc",
    str(2**63), "9" * 20, "1" * 1_000_000,
])
def test_a_malformed_command_id_is_refused(command_id: str):
    table, _ = opened()
    refused(table, sit_out(0, True, command_id), P0, BAD_COMMAND_ID)


def test_the_largest_command_id_is_two_to_the_63_minus_one():
    table, _ = opened()
    assert table.execute(sit_out(0, True, str(2**63 - 1)), by=P0)
    refused(table, sit_out(0, False, str(2**63 - 1)), P0, DUPLICATE_COMMAND)


def test_an_equal_or_lower_id_is_refused_as_a_duplicate():
    table, _ = opened()
    table.execute(sit_out(0, True, "100"), by=P0)
    refused(table, sit_out(0, False, "100"), P0, DUPLICATE_COMMAND)
    refused(table, sit_out(0, False, "99"), P0, DUPLICATE_COMMAND)
    assert table.execute(sit_out(0, False, "101"), by=P0)


def test_each_sender_numbers_his_own_commands():
    table, _ = opened()
    table.execute(sit_out(0, True, "500"), by=P0)
    assert table.execute(sit_out(1, True, "1"), by=P1)          # p1 is not held to p0's numbers
    assert table.execute(sit_out(1, False, "2"), by=FLOOR)       # nor is the floor to p1's


def test_a_refused_command_uses_up_no_id():
    table, _ = opened()
    refused(table, sit_out(1, True, "7"), P0, "forbidden")        # not his seat
    refused(table, sit_out(0, False, "7"), P0, "no_change")       # he is not sitting out
    assert table.execute(sit_out(0, True, "7"), by=P0)


def test_ids_are_refused_for_the_life_of_the_table_after_10000_other_commands():
    table, _ = opened()
    table.execute(sit_out(0, True, "1000"), by=P0)
    table.execute(sit_out(0, False, "1001"), by=P0)
    for i in range(10_000):                                      # other commands, by others
        by, seat = (FLOOR, 0) if i % 2 else (P1, 1)
        table.execute(sit_out(seat, table.seats[seat].sitting_out is False, str(2000 + i)), by=by)
    for replay in ("1000", "1001", "5"):
        refused(table, sit_out(0, not table.seats[0].sitting_out, replay), P0, DUPLICATE_COMMAND)
    assert len(table.last_command_ids) == 3                     # one entry per sender, not per command


def test_ids_survive_replay_also_through_json():
    table, events = opened()
    events += table.execute(sit_out(0, True, "41"), by=P0)
    events += table.execute(sit_out(0, False, "42"), by=P0)
    events += table.execute(sit_out(1, True, "7"), by=P1)
    decoded = msgspec.json.decode(msgspec.json.encode(events), type=list[TableEvent])
    again = Table.replay(decoded)
    assert again.state() == table.state()
    assert again.last_command_ids == {"player.p0": 42, "player.p1": 7}
    refused(again, sit_out(0, True, "42"), P0, DUPLICATE_COMMAND)


def test_ids_stored_before_senders_numbered_their_commands_replay_and_are_passed_over():
    table, events = opened()
    events += [ChipsBought(seat=0, amount=500, command_id="bot-t1-0:17:turn"),
               ChipsBought(seat=1, amount=500, command_id="timeout-4")]
    again = Table.replay(events)
    assert again.last_command_ids == {}
    assert again.seats[0].stack == 500


def test_a_command_of_the_room_itself_carries_no_id():
    table, _ = opened()
    refused(table, BuyIn(seat=0, amount=500, command_id="1"), None, BAD_COMMAND_ID)
    events = table.execute(SitDown(seat=2, player="p2"))
    assert isinstance(events[0], PlayerSatDown) and events[0].command_id is None


NOW_MS = 1_764_601_234_567            # the service's clock on the command (ms)


def stamped(seat: int, out: bool, command_id: str) -> SitOut:
    return SitOut(seat=seat, sitting_out=out, command_id=command_id, now_ms=NOW_MS)


@pytest.mark.parametrize("ahead_us", [AHEAD_US + 1, 86_400_000_000, 2**63 - 1 - NOW_MS * 1000])
def test_an_id_far_ahead_of_the_services_clock_is_refused_and_locks_nobody_out(ahead_us: int):
    """Issue 16: 2**63-1 (or now + 1 day) was carried out and then every later command of
    that sender was a "duplicate", even his Leave.  Refused, it uses up no id."""
    table, _ = opened()
    refused(table, stamped(0, True, str(NOW_MS * 1000 + ahead_us)), P0, BAD_COMMAND_ID)
    assert table.execute(stamped(0, True, str(NOW_MS * 1000)), by=P0)
    assert table.execute(Leave(seat=0, command_id=str(NOW_MS * 1000 + 1), now_ms=NOW_MS), by=P0)


def test_a_client_clock_up_to_the_margin_ahead_is_accepted():
    table, _ = opened()
    assert table.execute(stamped(0, True, str(NOW_MS * 1000 + AHEAD_US)), by=P0)
    refused(table, stamped(0, False, str(NOW_MS * 1000 + AHEAD_US)), P0, DUPLICATE_COMMAND)


def test_a_command_without_a_clock_is_bounded_by_two_to_the_63_only():
    """Scripted hands and the re-run of a record with no clock (now_ms 0)."""
    assert highest(0) == 2**63 - 1
    assert highest(NOW_MS) == NOW_MS * 1000 + AHEAD_US


def test_a_cashiers_buy_in_stored_before_buy_ins_named_their_player_replays():
    """Old streams: ChipsBought never carried the player (it still does not: the seat's
    holder is in the table's state); its id is remembered in that player's sequence."""
    table, events = opened()
    events += [ChipsBought(seat=0, amount=500, command_id="service.cashier#1733000000000000")]
    again = Table.replay(events)
    assert again.seats[0].stack == 500 and again.last_command_ids == {"service.cashier/p0": 1733000000000000}
    refused(again, BuyIn(seat=0, amount=500, player="p0", command_id="1733000000000000"), CASHIER, DUPLICATE_COMMAND)
    assert again.execute(BuyIn(seat=0, amount=500, player="p0", command_id="1733000000000001"), by=CASHIER)


def test_the_cashier_numbers_its_buy_ins_per_player():
    """One buy-in of each player may be in flight at a table: a later one of bob's does
    not make alice's earlier one a "duplicate" (docs/design/cashier.md)."""
    table, events = opened()
    events += table.execute(BuyIn(seat=1, amount=500, player="p1", command_id="20"), by=CASHIER)
    events += table.execute(BuyIn(seat=0, amount=500, player="p0", command_id="10"), by=CASHIER)
    refused(table, BuyIn(seat=0, amount=100, player="p0", command_id="10"), CASHIER, DUPLICATE_COMMAND)
    assert table.last_command_ids == {"service.cashier/p0": 10, "service.cashier/p1": 20}
    assert events[-1].command_id == "service.cashier#10"            # stored as before
    assert Table.replay(events).state() == table.state()


def test_a_sequence_kept_for_the_sender_before_still_counts():
    """A snapshot written before kept one sequence for the cashier: ids must be above it."""
    table, _ = opened()
    table.last_command_ids["service.cashier"] = 50
    refused(table, BuyIn(seat=0, amount=500, player="p0", command_id="50"), CASHIER, DUPLICATE_COMMAND)
    assert table.execute(BuyIn(seat=0, amount=500, player="p0", command_id="51"), by=CASHIER)
