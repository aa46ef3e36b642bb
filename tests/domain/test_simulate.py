"""The simulator the ledger, history and dispute tests stand on: a seed gives one room,
the room's streams are what the rules make of them, and its chips and the cashier's
accounts add up."""

from __future__ import annotations

from collections import Counter

from studroom.domain.account import Account, BuyInRefunded, Deposited, Withdrawn
from studroom.domain.events import HandEnded, LastCardsExposed, TimedOut
from studroom.domain.simulate import SimulatedTable, play_room
from studroom.domain.table import Table


def test_a_seed_gives_one_room() -> None:
    assert play_room(4, rounds=40, seed=7) == play_room(4, rounds=40, seed=7)
    assert play_room(4, rounds=40, seed=7) != play_room(4, rounds=40, seed=8)


def test_the_streams_replay_to_the_tables_that_made_them() -> None:
    played = SimulatedTable("t1", "seven_card_stud_hilo", 8, seed=3)
    events = played.play(30)
    replayed = Table.replay(events)
    assert replayed.hand_no == played.table.hand_no and replayed.hand_no > 10
    assert {s: (st.player, st.stack) for s, st in replayed.seats.items()} == \
        {s: (st.player, st.stack) for s, st in played.table.seats.items()}


def test_every_chip_of_the_room_is_in_an_account_on_a_seat_or_raked() -> None:
    tables, accounts = play_room(4, rounds=300, seed=6)
    kinds = Counter(type(e).__name__ for events in accounts.values() for e in events)
    assert {"BuyInReserved", "BuyInConfirmed", "BuyInRefunded", "CashedOut", "Deposited", "Withdrawn"} <= set(kinds)
    money_in = sum(e.amount for events in accounts.values() for e in events if isinstance(e, Deposited))
    money_out = sum(e.amount for events in accounts.values() for e in events if isinstance(e, Withdrawn))
    balances = sum(Account.replay(player, events).balance for player, events in accounts.items())
    on_seats = sum(state.stack for events in tables.values() for state in Table.replay(events).seats.values())
    raked = sum(e.rake for events in tables.values() for e in events if isinstance(e, HandEnded))
    assert money_in - money_out == balances + on_seats + raked


def test_a_refused_top_up_is_refunded_and_never_reaches_a_seat() -> None:
    _, accounts = play_room(4, rounds=300, seed=6)
    refunds = [e for events in accounts.values() for e in events if isinstance(e, BuyInRefunded)]
    assert refunds and {e.reason for e in refunds} == {"over_max_buy_in"}


def test_the_room_sees_timeouts_and_live_dealers_exposing_a_seventh_card() -> None:
    tables, _ = play_room(4, rounds=300, seed=6)
    events = [e for stream in tables.values() for e in stream]
    assert any(isinstance(e, TimedOut) for e in events)
    assert any(isinstance(e, LastCardsExposed) for e in events)
