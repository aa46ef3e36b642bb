"""The buy-in saga's decisions (services/cashier/saga.py, recovery.py) against the
domain's own tables behind a fake table service, with the in-memory event store (no
servers; the same steps on real servers: test_cashier_live.py): confirmed once,
refused and refunded, a lost reply, an unreachable table, a stop between the steps,
a take-over by another instance, and every chip accounted for."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from collections.abc import Callable
from typing import Any

import nats.errors
import pytest
from studroom.domain.account import Account
from studroom.domain.authority import Sender
from studroom.domain.commands import BuyIn, Leave, OpenTable, SitDown
from studroom.domain.config import TableConfig
from studroom.domain.errors import DomainError
from studroom.domain.events import ChipsBought
from studroom.domain.simulate import STAKES
from studroom.domain.table import Table
from studroom.domain.views import table_view
from studroom.services.cashier.account_store import Books
from studroom.services.cashier.recovery import Recovery
from studroom.services.cashier.saga import Busy, BuyInSaga
from studroom.services.client.table import Refused, TableClient
from studroom.services.store.memory import InMemoryEventStore
from studroom.services.wire import protocol

CONFIG = TableConfig(game="seven_card_stud", stakes=STAKES, max_buy_in=4000)


class FakeTables:
    """The table service as the cashier's connection sees it: each request runs the
    domain's table as the sender in the subject.  ``lose`` replies are dropped after the
    command was carried out; while ``down`` nobody answers."""

    def __init__(self, *table_ids: str) -> None:
        self.tables: dict[str, Table] = {}
        for table_id in table_ids:
            table = Table()
            table.execute(OpenTable(table_id=table_id, config=CONFIG))
            for seat, player in enumerate(("alice", "bob")):
                table.execute(SitDown(seat=seat, player=player))
            self.tables[table_id] = table
        self.events: dict[str, list[Any]] = {table_id: [] for table_id in table_ids}
        self.lose = 0
        self.down = False
        self.views = 0                                      # ViewTable requests answered
        self.after_view: Callable[[], None] | None = None   # what happens between a view and the next request

    async def request(self, subject: str, data: bytes, timeout: float) -> Any:
        if self.down:
            raise nats.errors.NoRespondersError
        _, _, table_id, name = subject.split(".")
        table = self.tables[table_id]
        request = protocol.decode_request(data)
        if isinstance(request, protocol.ViewTable):
            self.views += 1
            view = protocol.Reply(ok=True, version=table.version, view=table_view(table, None))
            if self.after_view is not None:
                self.after_view()
            return SimpleNamespace(data=protocol.encode_command(view))
        try:
            self.events[table_id] += table.execute(request, by=Sender("service", name))  # type: ignore[arg-type]
            reply = protocol.ok(table.version)
        except DomainError as e:
            reply = protocol.error(e.code, e.message)
        if self.lose:
            self.lose -= 1
            raise nats.errors.TimeoutError
        return SimpleNamespace(data=reply)

    def run(self, table_id: str, command: Any, by: Sender | None = None) -> None:
        """A command that reaches the table some other way."""
        self.events[table_id] += self.tables[table_id].execute(command, by=by)

    def bought(self, table_id: str) -> list[int]:
        """The amounts of the table's ChipsBought events."""
        return [e.amount for e in self.events[table_id] if isinstance(e, ChipsBought)]


class Crash(Exception):
    """The cashier stopped between two steps."""


def saga_of(store: InMemoryEventStore, tables: FakeTables, owner: str = "a", *, crash_after: str | None = None,
            takeover_ms: int = 30_000) -> BuyInSaga:
    def step(done: str) -> None:
        if done == crash_after:
            raise Crash(done)

    client = TableClient(tables, "service", "cashier", retry_for=0.3)
    return BuyInSaga(Books(store), client, owner, takeover_ms=takeover_ms, after_step=step)


async def funded(store: InMemoryEventStore, player: str = "alice", amount: int = 10_000) -> None:
    books = Books(store)
    account = await books.account(player)
    await books.save((account, [account.deposit(amount, "bankroll", "floor", 1)]))


async def account_of(store: InMemoryEventStore, player: str = "alice") -> Account:
    return await Books(store).account(player)


def test_a_buy_in_debits_the_account_and_credits_the_seat_once() -> None:
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store)
        settled = await saga_of(store, tables).buy_in("alice", "t1", 0, 1000, "1")
        assert settled.outcome == "confirmed"
        account = await account_of(store)
        assert (account.balance, account.reserved) == (9000, 0)
        assert tables.bought("t1") == [1000]
        assert tables.tables["t1"].seats[0].stack == 1000
    asyncio.run(run())


@pytest.mark.parametrize(("seat", "amount", "code"), [
    (0, 5000, "over_max_buy_in"), (0, 100, "short_buy_in"),        # R3: the table's bounds
    (1, 1000, "forbidden"),                                          # bob's seat, alice's money (issue 16)
    (5, 1000, "unknown_seat"),                                       # nobody sits there
])
def test_R3_a_buy_in_the_table_would_refuse_is_refused_at_the_door_and_stores_nothing(
        seat: int, amount: int, code: str) -> None:
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store)
        before = store.max_notification_id()
        with pytest.raises(DomainError) as refused:
            await saga_of(store, tables).buy_in("alice", "t1", seat, amount, "1")
        assert refused.value.code == code
        assert store.max_notification_id() == before and tables.events["t1"] == []
        assert (await account_of(store)).balance == 10_000
    asyncio.run(run())


def test_a_table_that_refuses_after_the_door_gets_the_chips_back_and_two_events() -> None:
    """The table changed between the view and the BuyIn (here: bob took alice's place):
    the table refuses, the saga refunds, exactly once."""
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store)
        table = tables.tables["t1"]
        tables.after_view = lambda: (table.execute(Leave(seat=0)), table.execute(SitDown(seat=0, player="carol")))
        before = store.max_notification_id()
        settled = await saga_of(store, tables).buy_in("alice", "t1", 0, 1000, "1")
        assert (settled.outcome, settled.code) == ("refunded", "forbidden")
        account = await account_of(store)
        assert (account.balance, account.reserved) == (10_000, 0)
        assert tables.bought("t1") == [] and table.seats[0].stack == 0
        assert store.max_notification_id() - before == 2      # reserved, refunded
    asyncio.run(run())


def test_an_account_refusal_reserves_nothing() -> None:
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store, amount=500)
        with pytest.raises(DomainError, match="insufficient_funds"):
            await saga_of(store, tables).buy_in("alice", "t1", 0, 1000, "1")
        assert store.max_notification_id() == 1
        assert tables.bought("t1") == []
    asyncio.run(run())


def test_a_lost_reply_is_sent_again_and_counted_once() -> None:
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store)
        tables.lose = 1                       # carried out, reply lost: the retry is a duplicate
        settled = await saga_of(store, tables).buy_in("alice", "t1", 0, 1000, "1")
        assert settled.outcome == "confirmed"
        assert tables.bought("t1") == [1000]
        assert (await account_of(store)).balance == 9000
    asyncio.run(run())


def test_an_unreachable_table_leaves_the_buy_in_pending_until_the_recovery_sends_it() -> None:
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store)
        await funded(store, "bob")
        saga = saga_of(store, tables)
        tables.after_view = lambda: setattr(tables, "down", True)     # seen at the door, then gone
        assert (await saga.buy_in("alice", "t1", 0, 1000, "1")).outcome == "pending"
        account = await account_of(store)
        assert (account.balance, account.reserved) == (9000, 1000)
        # Another buy-in at that table is refused at the door: nothing changes.
        tables.after_view = None
        with pytest.raises(Refused) as refused:
            await saga.buy_in("bob", "t1", 1, 1000, "1")
        assert refused.value.code == protocol.UNAVAILABLE
        assert (await account_of(store, "bob")).balance == 10_000
        tables.down = False
        recovery = Recovery(store, saga)
        await recovery.sweep()
        account = await account_of(store)
        assert (account.balance, account.reserved, recovery.resumed) == (9000, 0, 1)
        assert tables.bought("t1") == [1000]
    asyncio.run(run())


@pytest.mark.parametrize("step", ["reserved", "sent"])
def test_a_saga_stopped_between_its_steps_completes_on_restart(step: str) -> None:
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store)
        with pytest.raises(Crash):
            await saga_of(store, tables, crash_after=step).buy_in("alice", "t1", 0, 1000, "1")
        assert (await account_of(store)).reserved == 1000
        assert tables.bought("t1") == ([1000] if step == "sent" else [])
        restarted = saga_of(store, tables)            # the same instance id, started again
        await Recovery(store, restarted).sweep()
        account = await account_of(store)
        assert (account.balance, account.reserved) == (9000, 0)
        assert tables.bought("t1") == [1000]
    asyncio.run(run())


def test_a_saga_stopped_before_sending_is_undone_when_the_table_refuses_on_restart() -> None:
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store)
        with pytest.raises(Crash):
            await saga_of(store, tables, crash_after="reserved").buy_in("alice", "t1", 0, 1000, "1")
        tables.run("t1", BuyIn(seat=0, amount=3500))                # meanwhile the seat filled up (trusted)
        await Recovery(store, saga_of(store, tables)).sweep()
        account = await account_of(store)
        assert (account.balance, account.reserved) == (10_000, 0)
        assert tables.bought("t1") == [3500]
    asyncio.run(run())


def test_another_instance_takes_an_abandoned_buy_in_over_only_after_the_take_over_time() -> None:
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store)
        with pytest.raises(Crash):
            await saga_of(store, tables, "a", crash_after="reserved").buy_in("alice", "t1", 0, 1000, "1")
        patient = Recovery(store, saga_of(store, tables, "b", takeover_ms=60_000))
        await patient.sweep()
        assert (await account_of(store)).reserved == 1000 and patient.resumed == 0
        await asyncio.sleep(0.06)
        eager = Recovery(store, saga_of(store, tables, "b", takeover_ms=50))
        await eager.sweep()
        assert (await account_of(store)).reserved == 0 and eager.resumed == 1
        assert tables.bought("t1") == [1000]
    asyncio.run(run())


def test_a_duplicate_on_the_first_sending_is_refunded() -> None:
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1")
        await funded(store)
        # Another cashier store once sent this table a higher id for alice than ours will be.
        tables.run("t1", BuyIn(seat=0, amount=500, player="alice", command_id=str(2**62)),
                   by=Sender("service", "cashier"))
        settled = await saga_of(store, tables).buy_in("alice", "t1", 0, 1000, "1")
        assert (settled.outcome, settled.code) == ("refunded", "duplicate_command")
        assert (await account_of(store)).balance == 10_000
    asyncio.run(run())


def test_concurrent_buy_ins_of_two_players_at_one_table_and_of_one_player_at_two() -> None:
    """Buy-ins are serialised per player (his account), not per table: alice and bob buy
    in at t1 at once; alice's at t2, through another instance, meets hers on her account."""
    async def run() -> None:
        store, tables = InMemoryEventStore(), FakeTables("t1", "t2")
        for player in ("alice", "bob"):
            await funded(store, player)
        a, b = saga_of(store, tables, "a"), saga_of(store, tables, "b")
        results = await asyncio.gather(
            a.buy_in("alice", "t1", 0, 1000, "1"), a.buy_in("bob", "t1", 1, 800, "1"),
            b.buy_in("alice", "t2", 0, 700, "2"), return_exceptions=True)
        confirmed = [r for r in results if not isinstance(r, BaseException) and r.outcome == "confirmed"]
        refused = [r for r in results if isinstance(r, Busy)]
        assert len(confirmed) + len(refused) == 3 and len(confirmed) >= 2
        assert sorted(tables.bought("t1")) == [800, 1000]
        bought = tables.bought("t1") + tables.bought("t2")
        alice, bob = await account_of(store, "alice"), await account_of(store, "bob")
        assert alice.reserved == bob.reserved == 0
        assert 20_000 - alice.balance - bob.balance == sum(bought)
    asyncio.run(run())
