"""What the cashier's integration tests share: a secure NATS of their own (operator
mode, as the room runs it), a table service and the relay as child processes under
their own service credentials (the room's supervisor), cashier processes that a test
starts, kills and starts again, and the clients of the floor and the players, each on
a connection of his own identity."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from studroom.domain.account import AccountEventType
from studroom.domain.commands import Command, OpenTable, SitDown
from studroom.domain.config import TableConfig
from studroom.domain.events import ChipsBought, Event, PlayerLeft, TableEvent
from studroom.domain.simulate import STAKES
from studroom.services.auth.authority import Authority
from studroom.services.client.cashier import CashierClient
from studroom.services.cashier.retired_desks import DeskEventType
from studroom.services.client.table import TableClient
from studroom.services.runtime.processes import process
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.settings import NATS_CREDS_VAR
from studroom.services.runtime.processes.supervisor import SERVE, Services, child_env
from studroom.services.store.codec import register_event_types
from studroom.services.store.postgres import PostgresEventStore

CONFIG = TableConfig(game="seven_card_stud", stakes=STAKES, max_buy_in=4000)
T = TypeVar("T")
register_event_types(TableEvent, AccountEventType, DeskEventType)


class CashierProcess:
    """``studroom serve cashier`` as a child process of the test."""

    def __init__(self, stack: CashierStack, instance_id: str, *extra: str) -> None:
        self.stack = stack
        self.log = stack.log_dir / f"cashier-{instance_id}-{uuid.uuid4().hex[:4]}.log"
        command = [*SERVE, "cashier", "--instance-id", instance_id, "--schema", stack.cashier_schema,
                   "--consumer", stack.consumer, *extra]
        env = {**stack.env, NATS_CREDS_VAR: str(stack.authority.ensure("service", "cashier"))}
        self._log_file = self.log.open("wb")
        self.proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while "ready" not in self.log.read_text(errors="replace"):
            assert self.proc.poll() is None, f"the cashier exited with {self.proc.returncode}:\n{self.output()}"
            assert time.monotonic() < deadline, f"the cashier did not start:\n{self.output()}"
            time.sleep(0.05)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait(self, timeout: float = 20) -> int:
        code = self.proc.wait(timeout)
        self._log_file.close()
        return code

    def kill(self) -> None:
        """kill -9: no clean stop."""
        self.proc.kill()
        self.wait()

    def stop(self) -> int:
        """SIGTERM: a clean stop."""
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.wait()


class CashierStack:
    """A secure NATS in ``folder``, one table service and the relay; cashiers on demand."""

    def __init__(self, folder: Path, database_url: str) -> None:
        self.run = uuid.uuid4().hex[:6]
        self.nats = EmbeddedNats(folder / "nats-home")
        self.database_url = database_url
        self.log_dir = folder / "logs"
        self.prefix = f"itc{self.run}_p"
        self.cashier_schema = f"itc{self.run}_cashier"
        self.consumer = f"itc{self.run}_cashier"
        self.services: Services | None = None
        self.cashiers: list[CashierProcess] = []

    @property
    def authority(self) -> Authority:
        assert self.nats.authority is not None
        return self.nats.authority

    @property
    def url(self) -> str:
        return self.nats.url

    def start(self) -> None:
        self.nats.start()
        self.env = child_env(self.url, self.database_url, self.log_dir.parent)
        self.services = Services(self.env, self.log_dir, instances=1, stores=1, cashier=False, name=f"itc{self.run}",
                                 schema_prefix=self.prefix, authority=self.authority)
        self.services.start()

    def cashier(self, instance_id: str = "itc-cashier", *extra: str) -> CashierProcess:
        started = CashierProcess(self, instance_id, *extra)
        self.cashiers.append(started)
        return started

    def stop(self) -> list[str]:
        for cashier in self.cashiers:
            if cashier.proc.poll() is None:
                cashier.stop()
        problems = self.services.stop() if self.services is not None else []
        self.nats.stop()
        return problems

    # -- what is stored

    def table_events(self, table_id: str) -> list[Event]:
        store = PostgresEventStore(self.database_url, schema=f"{self.prefix}0", pool_size=1, max_overflow=0)
        try:
            return store.load(table_id)
        finally:
            store.close()

    def bought(self, table_id: str) -> list[ChipsBought]:
        return [e for e in self.table_events(table_id) if isinstance(e, ChipsBought)]

    def cashed_out(self, table_id: str) -> list[PlayerLeft]:
        return [e for e in self.table_events(table_id) if isinstance(e, PlayerLeft)]

    def account_events(self, player: str) -> list[Any]:
        return self._cashier_stream(f"account.{player}")

    def desk_events(self, table_id: str) -> list[Any]:
        """What a desk of an old store held (no longer written)."""
        return self._cashier_stream(f"desk.{table_id}")

    def _cashier_stream(self, stream: str) -> list[Any]:
        store = PostgresEventStore(self.database_url, schema=self.cashier_schema, pool_size=1, max_overflow=0)
        try:
            return store.load(stream)
        finally:
            store.close()


class People:
    """The floor and the players, each on a connection of his own identity."""

    def __init__(self, stack: CashierStack) -> None:
        self.stack = stack
        self._connections: dict[tuple[str, str], Any] = {}

    async def _nc(self, role: str, name: str) -> Any:
        if (role, name) not in self._connections:
            self._connections[role, name] = await process.connect(
                self.stack.url, f"test-{role}-{name}", creds=self.stack.authority.ensure(role, name),
                reconnect_time_wait=0.2)
        return self._connections[role, name]

    async def table(self, role: str, name: str) -> TableClient:
        return TableClient(await self._nc(role, name), role, name)

    async def cashier(self, role: str, name: str, retry_for: float = 10.0) -> CashierClient:
        return CashierClient(await self._nc(role, name), role, name, retry_for=retry_for)

    async def open_table(self, table_id: str, config: TableConfig = CONFIG, players: tuple[str, ...] = ()) -> None:
        """The floor opens the table (retried until a table service answers); the
        players sit down in seats 0, 1, ..."""
        floor = await self.table("operator", "floor")
        await must(floor, table_id, OpenTable(table_id=table_id, config=config))
        for seat, player in enumerate(players):
            await must(await self.table("player", player), table_id, SitDown(seat=seat, player=player))

    async def seated(self, table_id: str, player: str, deposit: int, retry_for: float = 10.0) -> CashierClient:
        """A table of its own with ``player`` in seat 0 and ``deposit`` in his account: his
        cashier client."""
        await self.open_table(table_id, players=(player,))
        await self.fund(player, deposit)
        return await self.cashier("player", player, retry_for)

    async def fund(self, player: str, amount: int, reference: str = "bankroll") -> None:
        floor = await self.cashier("operator", "floor")
        reply = await floor.deposit(player, amount, reference)
        assert reply.ok, reply.error

    async def close(self) -> None:
        for nc in self._connections.values():
            with contextlib.suppress(Exception):
                await nc.drain()


def play(stack: CashierStack, scenario: Callable[[People], Awaitable[T]]) -> T:
    """Run ``scenario`` with the clients of the floor and the players; close them after."""

    async def run() -> T:
        people = People(stack)
        try:
            return await scenario(people)
        finally:
            await people.close()

    return asyncio.run(run())


async def must(client: TableClient, table_id: str, command: Command) -> None:
    reply = await client.send(table_id, command, timeout=5.0)
    assert reply.ok, f"{table_id}: {command} refused: {reply.error}"


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 15.0, what: str = "") -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, f"not within {within} s: {what}"
        await asyncio.sleep(0.1)
