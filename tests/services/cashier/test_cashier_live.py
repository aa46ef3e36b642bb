"""The cashier on real servers (a NATS in operator mode, PostgreSQL, a table service
and the relay as processes, the cashier as a process): deposits and withdrawals with
references, a player's own account only, buy-ins and top-ups credited exactly once,
a refused buy-in refunded, cash-outs credited once, also when every PlayerLeft is
delivered again to a restarted cashier; and `studroom cashier ...` as an operator."""

from __future__ import annotations

import subprocess
import sys
import time

import nats.errors
import nats.js.errors
import pytest
from cashier_stack import CONFIG, CashierStack, People, eventually, must, play
from studroom.domain.account import (
    BuyInConfirmed,
    BuyInReserved,
    CashedOut,
    Deposited,
    Withdrawn,
)
from studroom.domain.commands import BuyIn, Leave, SitOut
from studroom.domain.errors import (
    BAD_AMOUNT,
    BAD_COMMAND_ID,
    DUPLICATE_COMMAND,
    DUPLICATE_REFERENCE,
    FORBIDDEN,
    HAND_IN_PROGRESS,
    INSUFFICIENT_FUNDS,
    OVER_MAX_BUY_IN,
    UNKNOWN_PLAYER,
)
from studroom.services.wire.cashier_protocol import BuyChips, Deposit
from studroom.services.runtime.settings import NATS_CREDS_VAR
from studroom.services.wire import protocol, subjects

pytestmark = pytest.mark.integration


def code(reply: object) -> str | None:
    error = getattr(reply, "error", None)
    return error.code if error is not None else None


def test_deposits_and_withdrawals_keep_their_references_and_never_go_below_zero(
        stack: CashierStack, name: str) -> None:
    stack.cashier()
    alice = f"{name}-alice"

    async def scenario(people: People) -> None:
        floor = await people.cashier("operator", "floor")
        assert (await floor.deposit(alice, 5000, "wire-1")).balance == 5000
        assert (await floor.withdraw(alice, 1200, "payout-1")).balance == 3800
        assert code(await floor.withdraw(alice, 3801, "payout-2")) == INSUFFICIENT_FUNDS
        again = await floor.deposit(alice, 5000, "wire-1")        # the same deposit asked again: done before
        assert again.ok and again.balance == 3800 and again.done_before is not None
        assert (again.done_before.version, again.done_before.event.amount) == (1, 5000)  # type: ignore[union-attr]
        assert code(await floor.deposit(alice, 4999, "wire-1")) == DUPLICATE_REFERENCE   # another amount: refused
        assert code(await floor.withdraw(alice, 5000, "wire-1")) == DUPLICATE_REFERENCE  # another kind: refused
        assert code(await floor.balance(f"{name}-nobody")) == UNKNOWN_PLAYER             # no account: not "0"
        assert code(await floor.deposit(alice, 0, "wire-2")) == BAD_AMOUNT
        assert code(await floor.deposit(alice, 10, "wire 2")) == "bad_name"
        balance = await floor.balance(alice)
        assert (balance.ok, balance.balance, balance.reserved, balance.version) == (True, 3800, 0, 2)
        movements = (await floor.movements(alice)).movements or []
        assert [(m.version, type(m.event), m.event.reference) for m in movements] == [  # type: ignore[union-attr]
            (1, Deposited, "wire-1"), (2, Withdrawn, "payout-1")]
        assert movements[0].event.operator == "floor" and movements[0].event.at_ms > 0  # type: ignore[union-attr]

    play(stack, scenario)


def test_a_player_sees_his_own_account_only_and_moves_no_money(stack: CashierStack, name: str) -> None:
    stack.cashier()
    alice, bob = f"{name}-alice", f"{name}-bob"

    async def scenario(people: People) -> None:
        await people.fund(alice, 700)
        mine = await people.cashier("player", alice)
        assert (await mine.balance()).balance == 700
        assert [type(m.event) for m in (await mine.movements()).movements or []] == [Deposited]
        assert code(await mine.balance(bob)) == FORBIDDEN
        assert code(await mine.movements(bob)) == FORBIDDEN
        assert code(await mine.request(Deposit(player=alice, amount=10, reference="free"))) == FORBIDDEN
        assert code(await mine.withdraw(alice, 10, "out")) == FORBIDDEN
        floor = await people.cashier("operator", "floor")
        assert code(await floor.request(BuyChips(table_id="t1", seat=0, amount=10, request_id="1"))) == FORBIDDEN
        # The server lets alice send only on her own subject: as bob she reaches nobody.
        with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
            await mine.nc.request(subjects.cashier_requests("player", bob), b'{"type": "Balance"}', timeout=1)
        assert (await floor.balance(alice)).balance == 700
        assert code(await floor.balance(bob)) == UNKNOWN_PLAYER       # nothing moved for bob: no account

    play(stack, scenario)


def test_a_buy_in_debits_the_account_and_credits_the_seat_exactly_once(stack: CashierStack, name: str) -> None:
    stack.cashier()
    table, alice = f"{name}-t", f"{name}-alice"

    async def scenario(people: People) -> None:
        mine = await people.seated(table, alice, 10_000)
        reply = await mine.buy_chips(table, 0, 1000)
        assert (reply.ok, reply.outcome) == (True, "confirmed")
        view = await (await people.table("player", alice)).view(table)
        assert [s.stack for s in view.seats] == [1000]
        # A request replayed (a retry after a lost reply) buys nothing; a new one tops up.
        replayed = BuyChips(table_id=table, seat=0, amount=1000, request_id=str(mine.ids.last))
        assert code(await mine.request(replayed)) == DUPLICATE_COMMAND
        assert (await mine.buy_chips(table, 0, 1000)).ok

    play(stack, scenario)
    [first, second] = stack.bought(table)
    assert (first.amount, second.amount) == (1000, 1000)
    assert first.command_id is not None and first.command_id.startswith("service.cashier#")
    events = stack.account_events(alice)
    assert [type(e) for e in events] == [Deposited, BuyInReserved, BuyInConfirmed, BuyInReserved, BuyInConfirmed]
    assert f"service.cashier#{events[1].command_id}" == first.command_id
    assert sum(e.amount for e in events if isinstance(e, BuyInConfirmed)) == 2000


def test_R3_a_buy_in_over_the_tables_maximum_is_refused_at_the_door(stack: CashierStack, name: str) -> None:
    stack.cashier()
    table, alice = f"{name}-t", f"{name}-alice"

    async def scenario(people: People) -> None:
        mine = await people.seated(table, alice, 10_000)
        reply = await mine.buy_chips(table, 0, CONFIG.max_buy_in + 1)  # type: ignore[operator]
        assert (reply.ok, reply.outcome, code(reply)) == (False, None, OVER_MAX_BUY_IN)
        after = await mine.balance()
        assert (after.balance, after.reserved) == (10_000, 0)
        assert code(await mine.buy_chips(table, 0, 20_000)) == INSUFFICIENT_FUNDS

    play(stack, scenario)
    assert stack.bought(table) == []
    assert [type(e) for e in stack.account_events(alice)] == [Deposited]      # nothing reserved, nothing refunded
    assert stack.desk_events(table) == []


def test_R3_top_ups_between_hands_and_none_during_a_hand(stack: CashierStack, name: str) -> None:
    stack.cashier()
    table, alice, bob = f"{name}-t", f"{name}-alice", f"{name}-bob"

    async def scenario(people: People) -> None:
        await people.open_table(table, players=(alice, bob))
        for player in (alice, bob):
            await people.fund(player, 10_000)
        mine = await people.cashier("player", alice)
        assert (await mine.buy_chips(table, 0, 1000)).ok
        assert (await mine.buy_chips(table, 0, 500)).ok          # a top-up: nobody else has chips yet
        assert (await (await people.cashier("player", bob)).buy_chips(table, 1, 1000)).ok
        # Two players with chips: the table deals; its hand waits for the bring-in.
        client = await people.table("player", alice)

        async def dealt() -> bool:
            return (await client.view(table)).hand is not None

        await eventually(dealt, what="a hand starts")
        reply = await mine.buy_chips(table, 0, 500)
        assert (reply.outcome, code(reply)) == (None, HAND_IN_PROGRESS)     # refused at the door
        after = await mine.balance()
        assert (after.balance, after.reserved) == (8500, 0)

    play(stack, scenario)
    assert [(b.seat, b.amount) for b in stack.bought(table)] == [(0, 1000), (0, 500), (1, 1000)]


def test_a_cash_out_credits_the_account_once_also_when_a_restarted_cashier_reads_it_again(
        stack: CashierStack, name: str) -> None:
    cashier = stack.cashier()
    table, alice = f"{name}-t", f"{name}-alice"

    async def scenario(people: People) -> None:
        mine = await people.seated(table, alice, 3000)
        assert (await mine.buy_chips(table, 0, 1200)).ok
        await must(await people.table("player", alice), table, Leave(seat=0))

        async def credited() -> bool:
            return (await mine.balance()).balance == 3000

        await eventually(credited, what="the cash-out is credited")
        # kill -9; the durable consumer is deleted, so the next cashier reads the whole
        # public stream again: every PlayerLeft is delivered once more.
        cashier.kill()
        service = await people._nc("service", "cashier")
        await service.jetstream().delete_consumer(subjects.PUBLIC_STREAM, stack.consumer)
        stack.cashier()
        floor = await people.cashier("operator", "floor")

        async def read_again() -> bool:
            try:
                info = await service.jetstream().consumer_info(subjects.PUBLIC_STREAM, stack.consumer)
            except nats.js.errors.NotFoundError:
                return False                   # not created again yet
            return info.num_pending == 0 and info.num_ack_pending == 0

        await eventually(read_again, what="the restarted cashier reads the public stream")
        assert (await floor.balance(alice)).balance == 3000

    play(stack, scenario)
    [left] = stack.cashed_out(table)
    cash_outs = [e for e in stack.account_events(alice) if isinstance(e, CashedOut)]
    assert [(c.table_id, c.amount) for c in cash_outs] == [(table, left.cashed_out)] == [(table, 1200)]


def test_requests_that_are_no_requests_are_refused_and_change_nothing(stack: CashierStack, name: str) -> None:
    stack.cashier()
    alice = f"{name}-alice"

    async def scenario(people: People) -> None:
        await people.fund(alice, 100)
        mine = await people.cashier("player", alice)
        subject = subjects.cashier_requests("player", alice)
        for body in (b"", b"{", b'{"type": "Steal"}', b'{"type": "Balance", "extra": 1}', b"x" * 9000,
                     b'{"type": "BuyChips", "table_id": "t", "seat": "0", "amount": 1}'):
            reply = await mine.nc.request(subject, body, timeout=5)
            assert f'"code":"{protocol.BAD_REQUEST}"'.encode() in reply.data, (body[:30], reply.data)
        assert (await mine.balance()).version == 1

    play(stack, scenario)


def test_an_operator_moves_money_from_the_command_line(stack: CashierStack, name: str) -> None:
    stack.cashier()
    alice = f"{name}-alice"
    env = {**stack.env, NATS_CREDS_VAR: str(stack.authority.ensure("operator", "floor"))}

    def cashier(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "studroom.services.cli", "cashier", *args], env=env,
                              capture_output=True, text=True, timeout=60, check=False)

    deposit = cashier("deposit", alice, "2500", "--reference", "wire-7")
    assert deposit.returncode == 0, deposit.stderr
    assert f"{alice}: balance 2,500" in deposit.stdout
    refused = cashier("withdraw", alice, "2501", "--reference", "payout-7")
    assert refused.returncode == 1 and INSUFFICIENT_FUNDS in refused.stderr
    statement = cashier("movements", alice, "--csv")
    assert statement.returncode == 0, statement.stderr
    rows = statement.stdout.splitlines()
    assert len(rows) == 2 and rows[1].split(",")[2:5] == ["Deposited", "2500", "2500"]


def test_a_buy_in_is_the_players_own_and_an_extreme_command_id_locks_nobody_out(
        stack: CashierStack, name: str) -> None:
    """Issue 16: mallory bought 300 into victim's seat; a command id of 2**63-1 locked its
    sender out of the table for its life.  Both refused with their codes, nothing stored."""
    stack.cashier()
    table, victim, mallory = f"{name}-t", f"{name}-victim", f"{name}-mallory"
    floods = 50

    async def scenario(people: People) -> None:
        await people.open_table(table, players=(victim, mallory))
        for player in (victim, mallory):
            await people.fund(player, 5000)
        assert (await (await people.cashier("player", victim)).buy_chips(table, 0, 1000)).ok
        stored = len(stack.table_events(table))
        theirs = await people.cashier("player", mallory)
        started = time.perf_counter()
        for _ in range(floods):
            reply = await theirs.buy_chips(table, 0, 300)
            assert (reply.ok, reply.outcome, code(reply)) == (False, None, FORBIDDEN), reply
        took = time.perf_counter() - started
        print(f"{floods} buy-ins into another's seat: refused in {took * 1000 / floods:.1f} ms each, "
              f"{len(stack.account_events(mallory)) - 1} cashier events, "
              f"{len(stack.table_events(table)) - stored} table events stored")
        balance = await theirs.balance()
        assert (balance.balance, balance.reserved) == (5000, 0)
        view = await (await people.table("player", victim)).view(table)
        assert [(s.player, s.stack) for s in view.seats] == [(victim, 1000), (mallory, 0)]
        # The table refuses it too, should a cashier send it (nothing stored either).
        cashier = await people.table("service", "cashier")
        for buy_in in (BuyIn(seat=0, amount=300, player=mallory), BuyIn(seat=0, amount=300)):
            assert code(await cashier.send(table, buy_in)) == FORBIDDEN
        assert len(stack.table_events(table)) == stored
        # Command ids far ahead of the room's clock: refused, and mallory still acts and leaves.
        hers = await people.table("player", mallory)
        day_ahead = (time.time_ns() // 1000) + 86_400_000_000
        for far in (2**63 - 1, day_ahead):
            assert code(await hers.send(table, SitOut(seat=1, command_id=str(far)))) == BAD_COMMAND_ID
            buy = BuyChips(table_id=table, seat=1, amount=1000, request_id=str(far))
            assert code(await theirs.request(buy)) == BAD_COMMAND_ID
        assert len(stack.table_events(table)) == stored
        await must(hers, table, SitOut(seat=1))                 # no hand deals: he leaves at once
        assert (await theirs.buy_chips(table, 1, 1000)).ok
        await must(hers, table, Leave(seat=1))

        async def cashed_out() -> bool:
            return (await theirs.balance()).balance == 5000

        await eventually(cashed_out, what="mallory's chips are back in his account")

    play(stack, scenario)
    assert [type(e) for e in stack.account_events(mallory)] == [Deposited, BuyInReserved, BuyInConfirmed, CashedOut]
    assert [(b.seat, b.amount) for b in stack.bought(table)] == [(0, 1000), (1, 1000)]
