"""The buy-in saga when cashiers die, on real servers: a cashier process ended between
reserving and sending, or between sending and confirming, finishes the buy-in when
it starts again (or undoes it when the table now refuses); another instance takes an
abandoned buy-in over after the take-over time; two instances serving one table at
once credit every chip exactly once; and how many buy-ins per second go through."""

from __future__ import annotations

import asyncio
import time

import pytest
from cashier_stack import CashierStack, People, eventually, must, play
from studroom.domain.account import (
    BuyInClaimed,
    BuyInConfirmed,
    BuyInRefunded,
    BuyInReserved,
    Deposited,
)
from studroom.domain.commands import Leave, SitOut
from studroom.domain.config import TableConfig
from studroom.domain.simulate import STAKES
from studroom.services.cashier.bootstrap import CRASH_EXIT
from studroom.services.wire import protocol
from studroom.services.wire.cashier_protocol import BuyChips

pytestmark = pytest.mark.integration


def kinds(stack: CashierStack, player: str) -> list[type]:
    return [type(e) for e in stack.account_events(player)]


async def buy_in_killed_after(stack: CashierStack, people: People, step: str, table: str, alice: str,
                              instance_id: str = "itc-cashier") -> None:
    """Alice asks for a buy-in of 1000 from a cashier that ends after ``step``."""
    cashier = stack.cashier(instance_id, "--crash-after", step)
    mine = await people.seated(table, alice, 5000, retry_for=2.0)
    # Its request waits a second for the reply (not the client's 5 s): none comes.
    buy_in = BuyChips(table_id=table, seat=0, amount=1000, request_id=mine.ids.next())
    reply = await mine.request(buy_in, timeout=1.0)
    assert code_of(reply) == protocol.UNAVAILABLE         # no reply: the cashier died mid-way
    assert cashier.wait() == CRASH_EXIT, cashier.output()


def code_of(reply: object) -> str | None:
    error = getattr(reply, "error", None)
    return error.code if error is not None else None


@pytest.mark.parametrize("step", ["reserved", "sent"])
def test_a_buy_in_killed_between_its_steps_completes_when_the_cashier_starts_again(
        stack: CashierStack, name: str, step: str) -> None:
    table, alice = f"{name}-t", f"{name}-alice"

    async def scenario(people: People) -> None:
        await buy_in_killed_after(stack, people, step, table, alice)
        assert kinds(stack, alice) == [Deposited, BuyInReserved]
        assert len(stack.bought(table)) == (1 if step == "sent" else 0)
        stack.cashier()                                      # the same instance id, started again

        async def settled() -> bool:
            return kinds(stack, alice)[-1] is BuyInConfirmed

        await eventually(settled, what="the open buy-in is finished")
        balance = await (await people.cashier("player", alice)).balance()
        assert (balance.balance, balance.reserved) == (4000, 0)

    play(stack, scenario)
    [bought] = stack.bought(table)
    assert bought.amount == 1000


def test_a_buy_in_killed_before_sending_is_undone_when_the_table_then_refuses(stack: CashierStack, name: str) -> None:
    table, alice = f"{name}-t", f"{name}-alice"

    async def scenario(people: People) -> None:
        await buy_in_killed_after(stack, people, "reserved", table, alice)
        await must(await people.table("player", alice), table, Leave(seat=0))     # the seat is gone
        stack.cashier()

        async def settled() -> bool:
            return kinds(stack, alice)[-1] is BuyInRefunded

        await eventually(settled, what="the open buy-in is undone")
        balance = await (await people.cashier("player", alice)).balance()
        assert (balance.balance, balance.reserved) == (5000, 0)

    play(stack, scenario)
    assert stack.bought(table) == []


def test_another_instance_takes_an_abandoned_buy_in_over_after_the_take_over_time(
        stack: CashierStack, name: str) -> None:
    table, alice = f"{name}-t", f"{name}-alice"

    async def scenario(people: People) -> None:
        await buy_in_killed_after(stack, people, "reserved", table, alice, instance_id="itc-a")
        stack.cashier("itc-b", "--takeover-after", "3")

        async def settled() -> bool:
            return kinds(stack, alice)[-1] is BuyInConfirmed

        await eventually(settled, what="instance b finishes a's buy-in")

    play(stack, scenario)
    assert [b.amount for b in stack.bought(table)] == [1000]
    _, reserved, claimed, confirmed = stack.account_events(alice)
    assert (type(reserved), type(claimed), type(confirmed)) == (BuyInReserved, BuyInClaimed, BuyInConfirmed)
    assert (reserved.owner, claimed.owner) == ("itc-a", "itc-b")
    assert claimed.at_ms - reserved.at_ms >= 3000                # not before a's claim was old


def test_two_instances_serving_one_table_credit_every_chip_exactly_once(stack: CashierStack, name: str) -> None:
    stack.cashier("itc-a")
    stack.cashier("itc-b")
    table = f"{name}-t"
    players = tuple(f"{name}-p{seat}" for seat in range(4))

    async def scenario(people: People) -> None:
        await people.open_table(table, players=players)
        for seat, player in enumerate(players):          # sitting out: no hand starts
            await must(await people.table("player", player), table, SitOut(seat=seat))
            await people.fund(player, 5000)

        async def buy(seat: int, player: str) -> list[bool]:
            client = await people.cashier("player", player, retry_for=30)
            return [(await client.buy_chips(table, seat, amount)).ok for amount in (300, 100, 100, 100, 100)]

        results = await asyncio.gather(*(buy(seat, p) for seat, p in enumerate(players)))
        assert all(all(r) for r in results), results

    play(stack, scenario)
    bought = stack.bought(table)
    assert sorted((b.seat, b.amount) for b in bought) == sorted(
        (seat, amount) for seat in range(4) for amount in (300, 100, 100, 100, 100))
    for seat in range(4):                                           # numbered per player, rising
        ids = [int(b.command_id.split("#")[1]) for b in bought if b.seat == seat]   # type: ignore[union-attr]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for player in players:
        events = stack.account_events(player)
        assert sum(e.amount for e in events if isinstance(e, BuyInConfirmed)) == 700
        assert not any(isinstance(e, BuyInRefunded) for e in events)


def test_buy_ins_per_second_through_the_saga(stack: CashierStack, name: str) -> None:
    """A figure, not a requirement: 8 tables, one player alone at each (no hand starts),
    each buying in then topping up one request after another."""
    stack.cashier()
    tables, per_table = 8, 25
    config = TableConfig(game="seven_card_stud", stakes=STAKES, max_buy_in=1_000_000)

    async def scenario(people: People) -> float:
        clients = []
        for i in range(tables):
            table, player = f"{name}-t{i}", f"{name}-p{i}"
            await people.open_table(table, config, players=(player,))
            await people.fund(player, 1_000_000)
            clients.append((table, await people.cashier("player", player)))
            await clients[-1][1].balance()                    # connected, warm

        async def buy(table: str, client: object) -> None:
            for _ in range(per_table):
                assert (await client.buy_chips(table, 0, 1000)).ok  # type: ignore[attr-defined]

        started = time.perf_counter()
        await asyncio.gather(*(buy(t, c) for t, c in clients))
        return time.perf_counter() - started

    seconds = play(stack, scenario)
    count = tables * per_table
    print(f"\ncashier: {count} buy-ins through the saga in {seconds:.2f} s = {count / seconds:.0f}/s "
          f"({tables} tables at once, one cashier instance, each: reserve, BuyIn, confirm)")
    assert sum(len(stack.bought(f"{name}-t{i}")) for i in range(tables)) == count
