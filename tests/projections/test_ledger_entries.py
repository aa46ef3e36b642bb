"""The ledger's bookings (projections/ledger/entries.py, account_entries.py): every chip
movement of a table and of the cashier as entries, proven on the golden hands and on
simulated rooms (pure: no database)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import msgspec
import pytest
from studroom.domain.account import Account
from studroom.domain.authority import Sender
from studroom.domain.commands import (
    BuyIn,
    Leave,
    OpenTable,
    SitDown,
    StartHand,
    Timeout,
)
from studroom.domain.config import Rake, TableConfig
from studroom.domain.events import (
    ChipsBought,
    HandEnded,
    HandSeat,
    HandStarted,
    PlayerLeft,
    PlayerSatDown,
    PotAwarded,
    TableEvent,
    TableOpened,
)
from studroom.domain.scenario import play
from studroom.domain.simulate import STAKES
from studroom.domain.table import Table
from studroom.projections.ledger import accounts
from studroom.projections.ledger.account_entries import CashierBook, account_entries
from studroom.projections.ledger.entries import (
    AWARD,
    AWARD_HIGH,
    AWARD_LOW,
    BUY_IN,
    CASH_OUT,
    CASH_OUT_CREDIT,
    CREDIT,
    DEPOSIT,
    POT,
    RAKE,
    REFUND,
    REFUND_BUY_IN,
    RESERVE,
    RETURN,
    WITHDRAWAL,
    Entry,
    TableBook,
    Unbookable,
    table_entries,
)
from studroom.domain.simulate import play_room, simulated_room

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
GOLDEN = [p for p in sorted(SCENARIOS.glob("*.json")) if "result" in json.loads(p.read_text(encoding="utf-8"))["expect"]]


def golden_events(path: Path) -> list[TableEvent]:
    """A golden hand as a table stores it: opened, its players seated with their stacks
    bought, then the hand's events."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    out = play(spec["scenario"])
    hand = msgspec.convert(out["events"], list[TableEvent], strict=False)
    started = next(e for e in hand if isinstance(e, HandStarted))
    s = spec["scenario"]
    rake = s.get("rake") or {}
    config = TableConfig(game=s["game"], stakes=msgspec.convert(s["stakes"], type=type(STAKES)),
                         rake=Rake(basis_points=int(float(rake.get("percent", 0)) * 100), cap=rake.get("cap")))
    seats: list[TableEvent] = []
    for seat in sorted(started.seats, key=lambda x: x.seat):
        seats += [PlayerSatDown(seat=seat.seat, player=seat.player), ChipsBought(seat=seat.seat, amount=seat.stack)]
    return [TableOpened(table_id="g", config=config), *seats, *hand]


def book(events: list, table: str = "g") -> list[Entry]:
    state = TableBook()
    return [entry for e in events for entry in table_entries(state, table, e)]


def balances(entries: list[Entry]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for e in entries:
        out[e.debit] += e.amount
        out[e.credit] -= e.amount
    return out


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_hands_are_booked_to_the_domains_result(path: Path) -> None:
    events = golden_events(path)
    entries = book(events)
    assert all(e.amount > 0 for e in entries)
    b = balances(entries)
    ended = next((e for e in events if isinstance(e, HandEnded)), None)
    started = next(e for e in events if isinstance(e, HandStarted))
    cashed_out = {e.seat: e.cashed_out for e in events if isinstance(e, PlayerLeft)}   # the floor's OP_* hands
    if ended is not None:
        for s in started.seats:
            assert b[accounts.seat("g", s.seat, s.player)] == ended.stacks[s.seat] - cashed_out.get(s.seat, 0)
        assert b[accounts.rake("g")] == ended.rake
    assert all(v == 0 for a, v in b.items() if accounts.class_of(a) in (accounts.HAND, accounts.POT))
    assert sum(b.values()) == 0


def _golden(name: str) -> list:
    return golden_events(SCENARIOS / f"{name}.json")


def test_R27_rake_is_booked_per_pot_from_the_pot_to_the_house() -> None:
    events = _golden("R27_rake_per_pot_rounded_down_with_cap_per_hand")
    raked = [(e.credit, e.amount) for e in book(events) if e.kind == RAKE]
    assert raked == [("pot:g#1/0", 7), ("pot:g#1/1", 8)]
    pots = {e.debit: e.amount for e in book(events) if e.kind == POT}
    assert pots == {"pot:g#1/0": 75, "pot:g#1/1": 160}


def test_R25_hilo_halves_are_booked_as_high_and_low_awards() -> None:
    events = _golden("R25_hilo_high_winner_also_ties_for_low_quartered")
    awards = [e for e in book(events) if e.kind in (AWARD_HIGH, AWARD_LOW)]
    pot = next(e for e in events if isinstance(e, PotAwarded))
    assert {e.kind for e in awards} == {AWARD_HIGH, AWARD_LOW}
    assert sum(e.amount for e in awards if e.kind == AWARD_LOW) == sum(pot.low.values())
    assert sum(e.amount for e in awards if e.kind == AWARD_HIGH) == sum(pot.high.values())
    assert not [e for e in book(events) if e.kind == AWARD]


def test_R15_an_uncalled_bet_goes_back_to_its_seat_unraked() -> None:
    events = _golden("R15_R27_uncalled_part_of_a_river_bet_is_returned_unraked")
    returned = [e for e in book(events) if e.kind == RETURN]
    assert len(returned) == 1 and returned[0].credit == "hand:g#1" and returned[0].debit.startswith("seat:g:")


def test_R5_a_cancelled_hand_refunds_every_ante() -> None:
    table = Table()
    events = table.execute(OpenTable(table_id="g", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    events += [e for seat in (0, 1) for e in table.execute(SitDown(seat=seat, player=f"p{seat}", auto_ante=seat == 0))]
    events += [e for seat in (0, 1) for e in table.execute(BuyIn(seat=seat, amount=500))]
    events += table.execute(StartHand(seed="00" * 32))
    events += table.execute(Timeout(turn=table.turn))          # seat 1 never posts: one ante only
    entries = book(events)
    assert [(e.kind, e.amount) for e in entries if e.kind == REFUND] == [(REFUND, STAKES.ante)]
    assert balances(entries)[accounts.seat("g", 0, "p0")] == 500


def test_a_buy_in_through_the_cashier_comes_from_transit_any_other_from_the_world() -> None:
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game="five_card_stud", stakes=STAKES)))
    events += table.execute(SitDown(seat=3, player="ann")) + table.execute(SitDown(seat=4, player="bo"))
    events += table.execute(BuyIn(seat=3, amount=400, player="ann", command_id="7"), Sender("service", "cashier"))
    events += table.execute(BuyIn(seat=4, amount=300))                      # trusted: a scripted table
    events += [ChipsBought(seat=4, amount=200, command_id="operator.floor#9")]  # stored before the cashier
    events += table.execute(Leave(seat=3))
    entries = book(events, "t")
    assert [(e.kind, e.credit, e.debit, e.amount) for e in entries] == [
        (BUY_IN, "transit:ann", "seat:t:3:ann", 400),
        (CREDIT, "world", "seat:t:4:bo", 300),
        (CREDIT, "world", "seat:t:4:bo", 200),
        (CASH_OUT, "seat:t:3:ann", "transit:ann", 400),
    ]


def test_the_cashiers_movements_are_booked_between_the_world_the_balance_and_transit() -> None:
    account = Account("ann")
    events = [
        account.deposit(1000, "wire-1", "floor", 5),
        account.reserve("t", 2, 600, "1", "11", 6),
        account.confirm("t", "1", 7),
        account.reserve("t", 2, 300, "2", "12", 8),
        account.refund("t", "2", "over_max_buy_in", 9),
        account.cash_out("t", 40, 2, 550, 10),
        account.withdraw(200, "payout-1", "floor", 11),
    ]
    entries = [e for event in events for e in account_entries(CashierBook(), "account.ann", event)]
    assert [(e.kind, e.credit, e.debit, e.amount, e.at_ms) for e in entries] == [
        (DEPOSIT, "world", "player:ann", 1000, 5),
        (RESERVE, "player:ann", "transit:ann", 600, 6),
        (RESERVE, "player:ann", "transit:ann", 300, 8),
        (REFUND_BUY_IN, "transit:ann", "player:ann", 300, 9),
        (CASH_OUT_CREDIT, "transit:ann", "player:ann", 550, 10),
        (WITHDRAWAL, "player:ann", "world", 200, 11),
    ]
    assert balances(entries)["player:ann"] == account.balance
    assert account_entries(CashierBook(), "desk.t", events[0]) == []


def test_a_simulated_room_books_every_chip_and_the_books_sum_to_zero() -> None:
    for table, events in play_room(4, rounds=120, seed=11).tables.items():
        entries = book(events, table)
        b = balances(entries)
        assert sum(b.values()) == 0
        final = _replay(events)
        held = {accounts.seat(table, s, st.player): st.stack for s, st in final.seats.items()}
        on_seats = {a: v for a, v in b.items() if accounts.class_of(a) == accounts.SEAT and (v or a in held)}
        assert on_seats == held                       # who left holds nothing any more
        assert b[accounts.rake(table)] == sum(e.rake for e in events if isinstance(e, HandEnded))


def _replay(events: list) -> Table:
    table = Table()
    for e in events:
        table.apply(e)
    return table


def test_entries_are_dated_by_the_service_clock_of_the_turns() -> None:
    room = simulated_room(1, seed=3)
    played = next(room)
    turns = [e for e in played.events if type(e).__name__ == "TurnStarted"]
    entries = book(played.events, played.table_id)
    dated = [e.at_ms for e in entries if e.at_ms is not None]
    assert dated and dated == sorted(dated)
    assert dated[-1] <= max(t.deadline_ms for t in turns)


def test_chips_of_a_seat_nobody_holds_cannot_be_booked() -> None:
    with pytest.raises(Unbookable):
        table_entries(TableBook(hand=1), "t", ChipsBought(seat=5, amount=10))
    with pytest.raises(Unbookable):
        table_entries(TableBook(seats={1: "a"}), "t", PotAwarded(pot=0, amount=10, rake=0, eligible=[1], high={1: 10}))


def test_a_hand_start_moves_nothing() -> None:
    started = HandStarted(hand_no=3, button=0, seats=[HandSeat(0, "a", 10)], commitment="")
    state = TableBook()
    assert table_entries(state, "t", started) == [] and state.hand == 3
