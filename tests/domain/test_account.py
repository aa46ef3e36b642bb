"""A player's account (domain/account.py): deposits and withdrawals with references, the
buy-in reservation and its settlement, cash-outs once per PlayerLeft, the balance never
below zero, who may do what; every refusal changes nothing, and replay rebuilds it."""

from __future__ import annotations

import copy

import msgspec
import pytest
from studroom.domain.account import (
    MAX_BALANCE,
    MAX_MOVEMENT,
    Account,
    AccountEvent,
    AccountEventType,
    BuyInConfirmed,
    BuyInRefunded,
    BuyInReserved,
    CashedOut,
    Deposited,
    Withdrawn,
    authorize,
    player_of,
    stream_id,
)
from studroom.domain.authority import Sender
from studroom.domain.errors import (
    BAD_AMOUNT,
    BAD_COMMAND_ID,
    BUY_IN_IN_FLIGHT,
    BAD_NAME,
    DUPLICATE_COMMAND,
    DUPLICATE_REFERENCE,
    FORBIDDEN,
    INSUFFICIENT_FUNDS,
    UNKNOWN_BUY_IN,
    UNKNOWN_SEAT,
    DomainError,
)

NOW = 1_764_601_234_567


def funded(amount: int = 1000) -> Account:
    account = Account("alice")
    account.deposit(amount, "wire-1", "floor", NOW)
    return account


def refused(account: Account, code: str, call: object, *args: object) -> None:
    """``call(*args)`` is refused with ``code`` and the account is unchanged."""
    before = copy.deepcopy(account.__dict__)
    with pytest.raises(DomainError) as e:
        call(*args)  # type: ignore[operator]
    assert e.value.code == code, e.value
    assert account.__dict__ == before


def test_deposits_and_withdrawals_move_the_balance_with_their_references() -> None:
    account = funded(1000)
    event = account.withdraw(400, "payout-7", "cage", NOW + 1)
    assert (event.amount, event.reference, event.operator, event.at_ms) == (400, "payout-7", "cage", NOW + 1)
    assert account.balance == 600
    assert set(account.references) == {"wire-1", "payout-7"}


def test_an_exact_repeat_of_a_movement_is_found_with_the_original() -> None:
    """A desk retrying a deposit it is not sure of: the same kind, amount and reference
    are the movement done before (its version and event); anything else is not."""
    account = funded(1000)
    withdrawn = account.withdraw(400, "payout-7", "cage", NOW + 1)
    assert account.repeat_of(Withdrawn, 400, "payout-7") == (2, withdrawn)
    assert account.repeat_of(Deposited, 1000, "wire-1") is not None
    assert account.repeat_of(Withdrawn, 401, "payout-7") is None
    assert account.repeat_of(Deposited, 400, "payout-7") is None
    assert account.repeat_of(Deposited, 1000, "wire-2") is None


def test_the_balance_never_goes_below_zero() -> None:
    account = funded(500)
    refused(account, INSUFFICIENT_FUNDS, account.withdraw, 501, "w2", "floor", NOW)
    refused(account, INSUFFICIENT_FUNDS, account.reserve, "t1", 2, 501, "9", "1", NOW)
    account.withdraw(500, "w2", "floor", NOW)
    assert account.balance == 0


def test_a_reference_is_booked_once() -> None:
    account = funded()
    refused(account, DUPLICATE_REFERENCE, account.deposit, 1000, "wire-1", "floor", NOW)
    refused(account, DUPLICATE_REFERENCE, account.withdraw, 10, "wire-1", "floor", NOW)
    refused(account, BAD_NAME, account.deposit, 10, "wire 2", "floor", NOW)
    refused(account, BAD_NAME, account.deposit, 10, "", "floor", NOW)


@pytest.mark.parametrize("amount", [0, -5, MAX_MOVEMENT + 1, 2**64, 1.5, True, "100"])
def test_amounts_are_whole_chips_within_bounds(amount: object) -> None:
    account = funded()
    refused(account, BAD_AMOUNT, account.deposit, amount, "w9", "floor", NOW)
    refused(account, BAD_AMOUNT, account.withdraw, amount, "w9", "floor", NOW)
    refused(account, BAD_AMOUNT, account.reserve, "t1", 1, amount, "9", "1", NOW)


def test_a_deposit_never_takes_a_balance_above_the_bound() -> None:
    account = Account("whale")
    for n in range(MAX_BALANCE // MAX_MOVEMENT):
        account.deposit(MAX_MOVEMENT, f"d{n}", "floor", NOW)
    assert account.balance == MAX_BALANCE
    refused(account, BAD_AMOUNT, account.deposit, 1, "one-more", "floor", NOW)


def test_a_buy_in_is_reserved_then_confirmed() -> None:
    account = funded(1000)
    reserved = account.reserve("t1", 3, 300, "1764601234567890", "41", NOW)
    assert reserved.request_id == "player.alice#41"
    assert (account.balance, account.reserved) == (700, 300)
    confirmed = account.confirm("t1", "1764601234567890", NOW)
    assert (confirmed.seat, confirmed.amount) == (3, 300)
    assert (account.balance, account.reserved, account.pending) == (700, 0, {})
    refused(account, UNKNOWN_BUY_IN, account.confirm, "t1", "1764601234567890", NOW)
    refused(account, UNKNOWN_BUY_IN, account.refund, "t1", "1764601234567890", "x", NOW)


def test_a_refused_buy_in_is_refunded() -> None:
    account = funded(1000)
    account.reserve("t1", 3, 300, "5", "1", NOW)
    refund = account.refund("t1", "5", "over_max_buy_in", NOW)
    assert (refund.amount, refund.reason) == (300, "over_max_buy_in")
    assert (account.balance, account.reserved) == (1000, 0)


def test_buy_in_requests_are_numbered_by_the_player() -> None:
    account = funded(1000)
    account.reserve("t1", 3, 100, "5", "41", NOW)
    refused(account, DUPLICATE_COMMAND, account.reserve, "t2", 3, 100, "6", "41", NOW)
    refused(account, DUPLICATE_COMMAND, account.reserve, "t2", 3, 100, "6", "40", NOW)
    refused(account, BAD_COMMAND_ID, account.reserve, "t2", 3, 100, "6", None, NOW)
    refused(account, BAD_COMMAND_ID, account.reserve, "t2", 3, 100, "6", "1e3", NOW)
    account.reserve("t2", 3, 100, "6", "42", NOW)
    assert account.reserved == 200


def test_a_buy_in_request_id_far_ahead_of_the_cashiers_clock_is_refused() -> None:
    """Issue 16: a request id of 2**63-1 would lock the player out of buying in for ever."""
    account = funded(1000)
    for far in (2**63 - 1, NOW * 1000 + 86_400_000_000):
        refused(account, BAD_COMMAND_ID, account.reserve, "t1", 3, 100, "5", str(far), NOW)
    account.reserve("t1", 3, 100, "5", str(NOW * 1000), NOW)


def test_a_buy_in_names_a_table_and_a_seat() -> None:
    account = funded(1000)
    refused(account, BAD_NAME, account.reserve, "t 1", 3, 100, "5", "1", NOW)
    refused(account, UNKNOWN_SEAT, account.reserve, "t1", 10, 100, "5", "1", NOW)
    refused(account, UNKNOWN_SEAT, account.reserve, "t1", -1, 100, "5", "1", NOW)


def test_a_cash_out_is_credited_once_per_player_left() -> None:
    account = funded(1)
    assert isinstance(account.cash_out("t1", 40, 3, 750, NOW), CashedOut)
    assert account.cash_out("t1", 40, 3, 750, NOW) is None            # the same PlayerLeft again
    assert account.balance == 751
    # An earlier PlayerLeft of the same table arriving late is still credited.
    assert account.cash_out("t1", 12, 3, 100, NOW) is not None
    assert account.cash_out("t2", 40, 3, 50, NOW) is not None
    assert account.cash_out("t3", 7, 3, 0, NOW) is None               # left with nothing
    assert account.balance == 901


def test_replay_rebuilds_the_account() -> None:
    account = funded(1000)
    events: list[AccountEventType] = [Deposited(amount=1000, reference="wire-1", operator="floor", at_ms=NOW)]
    events.append(account.reserve("t1", 3, 300, "5", "1", NOW))
    events.append(account.reserve("t2", 1, 200, "9", "2", NOW))
    events.append(account.confirm("t1", "5", NOW))
    events.append(account.withdraw(100, "w2", "floor", NOW))
    cashed = account.cash_out("t1", 40, 3, 640, NOW)
    assert cashed is not None
    events.append(cashed)
    stored = msgspec.json.encode(events)
    again = Account.replay("alice", msgspec.json.decode(stored, type=list[AccountEventType]))
    assert again.__dict__ == account.__dict__
    assert (again.balance, again.reserved, again.version) == (1000 - 300 - 200 - 100 + 640, 200, 6)
    refused(again, DUPLICATE_COMMAND, again.reserve, "t3", 1, 10, "1", "2", NOW)


def test_events_are_tagged_and_dated() -> None:
    event = BuyInRefunded(table_id="t1", seat=1, amount=5, command_id="3", reason="r", at_ms=NOW)
    assert msgspec.json.decode(msgspec.json.encode(event), type=AccountEventType) == event
    assert b'"type":"BuyInConfirmed"' in msgspec.json.encode(
        BuyInConfirmed(table_id="t1", seat=1, amount=5, command_id="3"))
    assert all(issubclass(t, AccountEvent) for t in (BuyInReserved, CashedOut))


def test_a_player_sees_and_buys_in_from_his_own_account_only() -> None:
    alice = Sender("player", "alice")
    authorize(alice, "alice", "view")
    authorize(alice, "alice", "buy_in")
    for operation in ("deposit", "withdraw"):
        with pytest.raises(DomainError, match=FORBIDDEN):
            authorize(alice, "alice", operation)  # type: ignore[arg-type]
    for operation in ("view", "buy_in"):
        with pytest.raises(DomainError) as e:
            authorize(alice, "bob", operation)  # type: ignore[arg-type]
        assert e.value.code == FORBIDDEN


def test_an_operator_moves_money_but_buys_in_for_nobody() -> None:
    floor = Sender("operator", "floor")
    for operation in ("view", "deposit", "withdraw"):
        authorize(floor, "bob", operation)  # type: ignore[arg-type]
    with pytest.raises(DomainError, match=FORBIDDEN):
        authorize(floor, "bob", "buy_in")
    with pytest.raises(DomainError, match=FORBIDDEN):
        authorize(Sender("service", "timer"), "bob", "view")


def test_an_account_is_a_stream_of_the_cashier_store() -> None:
    assert stream_id("alice") == "account.alice"
    assert player_of("account.alice") == "alice"
    assert player_of("desk.t1") is None


def test_one_buy_in_in_flight_per_table_with_rising_table_command_ids() -> None:
    """The table numbers the cashier's buy-ins per player (domain/command_ids.py): the
    account gives them rising ids at each table and keeps one in flight there at a time."""
    account = funded(1000)
    first = account.next_buy_in_id("t1", NOW * 1000)
    account.reserve("t1", 3, 100, first, "41", NOW, "a")
    refused(account, BUY_IN_IN_FLIGHT, account.reserve, "t1", 3, 100, str(NOW * 1000 + 5), "42", NOW, "a")
    account.reserve("t2", 1, 100, account.next_buy_in_id("t2", NOW * 1000), "42", NOW, "a")   # another table
    account.refund("t1", first, "forbidden", NOW)
    assert int(account.next_buy_in_id("t1", 1)) == int(first) + 1       # above the last, the clock gone back
    assert account.open_at("t1") is None and account.open_at("t2") is not None


def test_its_owner_claims_a_buy_in_in_flight_at_once_another_instance_after_the_take_over_time() -> None:
    account = funded(1000)
    account.reserve("t1", 3, 100, "7", "41", NOW, "a")
    claim = account.claim("t1", "a", NOW + 1, 30_000)
    assert (claim.owner, claim.command_id) == ("a", "7")
    refused(account, BUY_IN_IN_FLIGHT, account.claim, "t1", "b", NOW + 30_000, 30_000)
    account.claim("t1", "b", NOW + 30_001, 30_000)
    r = account.open_at("t1")
    assert r is not None and (r.owner, r.claimed_ms) == ("b", NOW + 30_001)
    assert r.fresh("b", NOW + 40_000, 10_000) and not r.fresh("b", NOW + 40_001, 10_000) and not r.fresh("a", NOW, 1)
    refused(account, UNKNOWN_BUY_IN, account.claim, "t2", "a", NOW, 30_000)
