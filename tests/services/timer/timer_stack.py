"""What the timer's integration tests share: a secure NATS of their own (operator mode,
as the room and deploy/ run it) with one table service and one relay, each under its
own service credentials, in a thread of their own; the drivers, who play every seat
but the sleeper's as that seat's player (the operator "floor" opens the tables, the
service "cashier" buys the players in); the spectator's secrecy watch; and the checks
of what the tables stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from secrecy import Watch, watching
from studroom.domain import errors
from studroom.domain.commands import Act, BuyIn, Command, Muck, OpenTable, Show, SitDown, SitOut
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.events import Event, HandEnded, HandStarted, TableEvent, TimedOut, TurnStarted
from studroom.domain.table import Table
from studroom.projections.ledger.conservation import check_table
from studroom.services.auth.authority import Authority
from studroom.services.client.table import TableClient
from studroom.services.runtime.processes import process
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.settings import (
    DATA_DIR_VAR,
    DATABASE_URL_VAR,
    NATS_CREDS_VAR,
    NATS_URL_VAR,
    Settings,
)
from studroom.services.store.codec import register_event_types
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.wire import event_messages, subjects

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
SLEEPER = 0
PREFERENCE = ("raise", "bet", "complete", "call", "check", "bring_in", "fold")
T = TypeVar("T")


# ------------------------------------------------------------------------ the stack


class Stack:
    """One table service and one relay on a secure NATS, in a thread of their own."""

    def __init__(self, server: EmbeddedNats, database_url: str, data_dir: Path, prefix: str,
                 pause_ms: int = 0) -> None:
        assert server.authority is not None
        self.pause_ms = pause_ms
        self.nats_server = server
        self.authority: Authority = server.authority
        self.database_url = database_url
        self.data_dir = data_dir
        self.prefix = prefix
        self.schema = f"{prefix}0"
        self.stop_event: asyncio.Event | None = None
        self.failed: BaseException | None = None

    @property
    def url(self) -> str:
        return self.nats_server.url

    def settings_as(self, role: str, name: str) -> Settings:
        """The settings of a process of this identity (its credentials)."""
        return Settings(nats_url=self.url, database_url=self.database_url, data_dir=self.data_dir,
                        nats_creds=self.authority.ensure(role, name))

    async def connect_as(self, role: str, name: str) -> Any:
        return await process.connect(self.url, f"test-{role}-{name}", creds=self.authority.ensure(role, name),
                                     reconnect_time_wait=0.2)

    def _run(self) -> None:
        from studroom.services.relay.bootstrap import serve_relay
        from studroom.services.table.bootstrap import serve_table

        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self.stop_event = asyncio.Event()
            table = asyncio.create_task(serve_table(
                self.settings_as("service", "table"), instance_id="timer-it", stores=1, schema_prefix=self.prefix,
                stop=self.stop_event, pause_ms=self.pause_ms, on_ready=lambda _service: self.ready.set()))
            relay = asyncio.create_task(serve_relay(
                self.settings_as("service", "relay"), store_schemas=[self.schema], stop=self.stop_event))
            done, _ = await asyncio.wait({table, relay}, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if task.exception() is not None:
                    self.failed = task.exception()
                    self.ready.set()
                    self.stop_event.set()
            await asyncio.gather(table, relay, return_exceptions=True)

        try:
            self.loop.run_until_complete(main())
        except BaseException as e:  # noqa: BLE001
            self.failed = e
            self.ready.set()

    def start(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.stop_event = None
        self.ready = threading.Event()
        self.failed = None
        self.thread = threading.Thread(target=self._run, name="timer-test-stack", daemon=True)
        self.thread.start()
        assert self.ready.wait(60), "table service not ready"
        if self.failed is not None:
            raise self.failed

    def stop(self) -> None:
        if self.stop_event is not None:
            self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(30)
        self.loop.close()

    def events(self, table_id: str) -> list[Event]:
        register_event_types(TableEvent)
        store = PostgresEventStore(self.database_url, schema=self.schema, pool_size=1, max_overflow=0)
        try:
            return store.load(table_id)
        finally:
            store.close()


@contextlib.contextmanager
def running_stack(database_url: str, name: str, **options: Any) -> Iterator[Stack]:
    """A module's stack: its own embedded NATS in a temporary folder, a fresh store
    schema prefix (``name``), the table service and relay started; all gone after."""
    folder = Path(tempfile.mkdtemp(prefix=f"studroom-it-{name}-"))
    with EmbeddedNats(folder) as server:
        stack = Stack(server, database_url, folder, prefix=f"it{name}_{uuid.uuid4().hex[:6]}_p", **options)
        stack.start()
        try:
            yield stack
        finally:
            stack.stop()
    shutil.rmtree(folder, ignore_errors=True)


def stop_timer(proc: subprocess.Popen[bytes]) -> None:
    """A spawned timer service stopped: SIGTERM, SIGKILL if it is still there 10 s later."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def spawn_timer(stack: Stack, log_path: Path, name: str) -> subprocess.Popen[bytes]:
    """``studroom serve timer`` as a process of its own (to be killed), logging to ``log_path``."""
    env = dict(os.environ)
    env[NATS_URL_VAR] = stack.url
    env[NATS_CREDS_VAR] = str(stack.authority.ensure("service", "timer"))
    env[DATABASE_URL_VAR] = stack.database_url
    env[DATA_DIR_VAR] = str(stack.data_dir)
    env["PYTHONUNBUFFERED"] = "1"
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "studroom.services.cli", "serve", "timer", "--instance-id", name,
             "--stats-every", "1"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@contextlib.asynccontextmanager
async def secrecy_watch(stack: Stack) -> AsyncIterator[Watch]:
    """Every public message while inside, as the public spectator sees it, for the
    secrecy check (tests/secrecy.py: no down card, folded card or early seed)."""
    nc = await stack.connect_as("spectator", "public")
    try:
        async with watching(nc) as watch:
            yield watch
    finally:
        await nc.drain()


async def watched(stack: Stack, play: Awaitable[T], tables: list[str] | None = None) -> T:
    """``play``'s result, after the secrecy check of every public message it caused:
    with ``tables``, each of their stored events must have come publicly and the store
    is the truth; without (a test that loses messages on purpose), what came is scanned."""
    async with secrecy_watch(stack) as watch:
        result = await play
        await watch.check(stack.events if tables is not None else None, tables or ())
    return result


# ------------------------------------------------------------------------ the drivers


class Drivers:
    """Plays every seat but the sleeper at some tables, each as its player with his
    own connection; the operator "floor" opens the tables and watches the public
    events, the service "cashier" buys the players in; records what the tables say."""

    def __init__(self, stack: Stack, players: int) -> None:
        self.stack = stack
        self.players = players
        self.clients: dict[str, TableClient] = {}
        self.seen: dict[str, list[tuple[float, Event]]] = defaultdict(list)   # wall ms, event
        self.ended: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.refusals: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._sat_out: set[str] = set()

    async def client(self, role: str, name: str) -> TableClient:
        """The identity's client, on a connection of its own (opened on first use)."""
        key = f"{role}.{name}"
        if key not in self.clients:
            self.clients[key] = TableClient(await self.stack.connect_as(role, name), role, name)
        return self.clients[key]

    async def close(self) -> None:
        for client in self.clients.values():
            with contextlib.suppress(Exception):
                await client.nc.drain()

    async def open(self, table_id: str, config: TableConfig) -> None:
        floor = await self.client("operator", "floor")
        await floor.nc.subscribe(subjects.public_events(table_id), cb=self._on_public)
        await floor.nc.flush()
        await self._must(floor, table_id, OpenTable(table_id=table_id, config=config))
        for seat in range(self.players):
            player = await self.client("player", self.player(table_id, seat))
            await self._must(player, table_id, SitDown(seat=seat, player=player.name, auto_ante=True))
            await self._must(await self.client("service", "cashier"), table_id,
                             BuyIn(seat=seat, amount=40 * STAKES.small_bet, player=player.name))

    @staticmethod
    def player(table_id: str, seat: int) -> str:
        return f"{table_id}-p{seat}"

    async def _must(self, client: TableClient, table_id: str, command: Command) -> None:
        reply = await client.send(table_id, command, timeout=5.0)
        assert reply.ok, f"{table_id}: {command} refused: {reply.error}"

    async def _on_public(self, msg: Any) -> None:
        table_id = subjects.table_of_public(msg.subject)
        for event in event_messages.decode_events(msg.data):
            self._on_event(table_id, event)

    def _on_event(self, table_id: str, event: Event) -> None:
        self.seen[table_id].append((time.time() * 1000, event))
        if isinstance(event, HandStarted) and table_id not in self._sat_out:
            self._sat_out.add(table_id)            # one hand per table: everyone sits out next
            for seat in (s.seat for s in event.seats):   # a late sitter alone starts no hand
                self._spawn(self._send(table_id, seat, SitOut(seat=seat, sitting_out=True)))
        elif isinstance(event, HandEnded):
            self.ended[table_id].set()
        elif isinstance(event, TurnStarted) and event.seat not in (None, SLEEPER):
            if event.kind == "show":
                command: Command = Show(seat=event.seat)
            elif event.kind == "act":
                command = Act(seat=event.seat, action=next(a for a in PREFERENCE if a in event.options))
            else:
                return
            self._spawn(self._send(table_id, event.seat, command))

    async def _send(self, table_id: str, seat: int, command: Command) -> None:
        client = await self.client("player", self.player(table_id, seat))
        reply = await client.send(table_id, command, timeout=5.0)
        if not reply.ok and reply.error is not None:
            if reply.error.code == errors.MUST_SHOW and isinstance(command, Muck):
                return
            self.refusals.append(f"{table_id} {type(command).__name__}: {reply.error.code}")

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait_ended(self, table_ids: list[str], timeout: float) -> None:
        await asyncio.wait_for(asyncio.gather(*(self.ended[t].wait() for t in table_ids)), timeout)
        async with asyncio.timeout(10):            # the SitOuts' and last events' replies
            while self._tasks:
                await asyncio.sleep(0.01)

    def sleeper_waiting(self, table_id: str) -> TurnStarted | None:
        """The sleeper's turn if it is the table's open turn."""
        turns = [e for _, e in self.seen[table_id] if isinstance(e, TurnStarted)]
        ended = any(isinstance(e, HandEnded) for _, e in self.seen[table_id])
        if turns and not ended and turns[-1].seat == SLEEPER and turns[-1].kind != "ante":
            last_turn = turns[-1].turn
            if not any(isinstance(e, TimedOut) and e.turn == last_turn for _, e in self.seen[table_id]):
                return turns[-1]
        return None


async def armed_deadlines(js: Any, drivers: Drivers, ids: list[str], wait: float = 20.0) -> dict[str, int]:
    """The deadline of each table whose sleeper's turn is open and whose timer the
    service has scheduled (waits up to ``wait`` seconds for all of them)."""
    deadline = time.monotonic() + wait
    armed: dict[str, int] = {}
    while len(armed) < len(ids) and time.monotonic() < deadline:
        for table_id in set(ids) - set(armed):
            turn = drivers.sleeper_waiting(table_id)
            if turn is None:
                continue
            with contextlib.suppress(Exception):
                pending = await js.get_last_msg(subjects.TIMER_STREAM, subjects.timer_schedule(table_id))
                if msgspec.json.decode(pending.data)["turn"] == turn.turn:
                    armed[table_id] = turn.deadline_ms
        await asyncio.sleep(0.05)
    return armed


def config(policy: str = "all_in_protection", seconds: int = 1) -> TableConfig:
    return TableConfig(game="seven_card_stud", stakes=STAKES, action_seconds=seconds,
                       ante_seconds=seconds, showdown_seconds=seconds, timeout_policy=policy)


# ------------------------------------------------------------------------- checks


def every_table_finished_with_one_timeout_per_turn(stack: Stack, ids: list[str], drivers: Drivers) -> None:
    assert not drivers.refusals, drivers.refusals
    for table_id in ids:
        events = stack.events(table_id)
        assert any(isinstance(e, HandEnded) for e in events), f"{table_id}: no hand ended"
        exactly_one_timeout_per_sleeper_turn(table_id, events)
        chips_conserved(table_id, events)


def chips_conserved(table_id: str, events: list[Event]) -> None:
    """A finished hand, and every chip bought in is on a seat, raked or cashed out."""
    check = check_table(table_id, events)
    assert Table.replay(events).hand is None, f"{table_id}: a hand is still running"
    assert check.conserved, check.bad


def exactly_one_timeout_per_sleeper_turn(table_id: str, events: list[Event]) -> Counter[int]:
    """Every turn of the sleeper ended with exactly one TimedOut; nobody else timed out."""
    sleeper_turns = {e.turn for e in events if isinstance(e, TurnStarted) and e.seat == SLEEPER
                     and e.kind in ("act", "show")}
    timeouts = Counter(e.turn for e in events if isinstance(e, TimedOut))
    assert all(n == 1 for n in timeouts.values()), f"{table_id}: a turn timed out twice: {timeouts}"
    assert set(timeouts) == sleeper_turns, (
        f"{table_id}: sleeper turns {sorted(sleeper_turns)} but timeouts {sorted(timeouts)}")
    assert all(e.seat == SLEEPER for e in events if isinstance(e, TimedOut))
    return timeouts


def lateness_ms(seen: list[tuple[float, Event]]) -> list[float]:
    """For each TimedOut the test saw: arrival (wall clock) minus its turn's deadline."""
    deadlines = {e.turn: e.deadline_ms for _, e in seen if isinstance(e, TurnStarted)}
    return [at - deadlines[e.turn] for at, e in seen if isinstance(e, TimedOut)]
