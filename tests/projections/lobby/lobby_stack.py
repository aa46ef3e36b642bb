"""What the lobby's integration tests share: a room of their own on real servers, and
what they look at.

* a NATS server in operator mode of its own (so that no other test's tables reach the
  lobby's durable consumer), the session's PostgreSQL with a fresh store schema;
* the room's services as the room runs them (``runtime.processes.supervisor.Services``: a table
  service, the relay, the timer), each under its own credentials;
* lobby processes (``studroom serve lobby``) started and killed by the tests;
* bots (``services/players/bot.py``) at tables with one-second timers; their chips come
  from the service "cashier" (the only identity besides an operator that may credit a
  seat), and a sleeper who never acts is timed out at one table;
* a recorder of every value the lobby stored (a KV watch) and every public message, with
  the time each arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studroom.domain import views
from studroom.domain.commands import BuyIn, OpenTable, SitDown, SitOut
from studroom.domain.config import TableConfig
from studroom.domain.errors import NO_CHANGE
from studroom.domain.events import (
    CardsDealt,
    Event,
    HandShown,
    HandStarted,
    LastCardsExposed,
)
from studroom.domain.simulate import STAKES
from studroom.domain.table import Table
from studroom.projections.lobby.entry import LobbyEntry, decode
from studroom.services.wire.subjects import LOBBY_BUCKET
from studroom.projections.lobby.projection import from_view
from studroom.services.auth.authority import Authority
from studroom.tools.lobby_lag import lags_ms
from studroom.services.players.asking import code_of
from studroom.services.players.bot import Bot
from studroom.services.client.table import TableClient
from studroom.services.runtime.processes import process
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.settings import NATS_CREDS_VAR
from studroom.services.runtime.processes.supervisor import SERVE, Services, child_env
from studroom.services.store.inspect import load_tables
from studroom.services.store.layout import store_schemas
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import events_of

GAMES = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")
SLEEPER_SEAT = 5


def config(game: str) -> TableConfig:
    return TableConfig(game=game, stakes=STAKES, action_seconds=1, ante_seconds=1, showdown_seconds=1)


class Stack:
    """The room's services on a NATS of the tests' own; lobby processes on demand."""

    def __init__(self, data_dir: Path, database_url: str, name: str) -> None:
        self.data_dir = data_dir
        self.database_url = database_url
        self.name = name
        self.nats = EmbeddedNats(data_dir)
        self.lobbies: dict[str, tuple[subprocess.Popen[bytes], Any]] = {}

    @property
    def authority(self) -> Authority:
        assert self.nats.authority is not None
        return self.nats.authority

    @property
    def url(self) -> str:
        return self.nats.url

    @property
    def schemas(self) -> list[str]:
        return store_schemas(1, f"{self.name}_p")

    def env(self) -> dict[str, str]:
        return child_env(self.url, self.database_url, self.data_dir)

    def start(self) -> None:
        self.nats.start()
        self.services = Services(self.env(), self.data_dir / "logs", instances=1, stores=1, timers=True,
                                 cashier=False, lobby=False, history=False, ledger=False, name=self.name,
                                 schema_prefix=f"{self.name}_p", authority=self.authority)
        self.services.start()

    def stop(self) -> list[str]:
        problems = [f"lobby {name} exited {proc.returncode}" for name, (proc, _) in self.lobbies.items()
                    if proc.poll() is not None and proc.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL)]
        for name in list(self.lobbies):
            self.stop_lobby(name)
        problems += self.services.stop()
        self.nats.stop()
        return problems

    # -- lobby processes

    def start_lobby(self, name: str) -> None:
        log = (self.data_dir / "logs" / f"{name}.log").open("ab")
        env = {**self.env(), NATS_CREDS_VAR: str(self.authority.ensure("service", "lobby"))}
        proc = subprocess.Popen([*SERVE, "lobby", "--instance-id", name], env=env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.lobbies[name] = (proc, log)

    def kill_lobby(self, name: str) -> None:
        proc, log = self.lobbies.pop(name)
        proc.kill()
        proc.wait(10)
        log.close()

    def stop_lobby(self, name: str) -> None:
        proc, log = self.lobbies.pop(name)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
        log.close()

    def log_of(self, name: str) -> str:
        return (self.data_dir / "logs" / f"{name}.log").read_text(errors="replace")

    # -- what the store says

    def stored(self, table_ids: list[str]) -> dict[str, list[Event]]:
        return load_tables(self.database_url, self.schemas, only=table_ids)

    async def connect_as(self, role: str, name: str, **options: Any) -> Any:
        return await process.connect(self.url, f"test-{role}-{name}", creds=self.authority.ensure(role, name),
                                     **({"reconnect_time_wait": 0.2} | options))


# --------------------------------------------------------------------------- players


class Players:
    """Bots at tables of each game, credited by the service "cashier"; at the first
    table a sleeper who never acts (the timer times him out)."""

    def __init__(self, stack: Stack, prefix: str, bots_per_table: int = 4) -> None:
        self.stack = stack
        self.table_ids = [f"{prefix}{i}" for i in range(len(GAMES))]
        self.bots_per_table = bots_per_table
        self.bots: list[Bot] = []
        self._connections: list[Any] = []

    async def _client(self, role: str, name: str) -> TableClient:
        nc = await self.stack.connect_as(role, name)
        self._connections.append(nc)
        return TableClient(nc, role, name)

    async def start(self) -> None:
        floor = await self._client("operator", "floor")
        cashier = await self._client("service", "cashier")

        async def bank(table_id: str, seat: int, amount: int) -> Any:
            player = f"{table_id}-sleeper" if seat == SLEEPER_SEAT else f"{table_id}-p{seat}"
            return await cashier.send(table_id, BuyIn(seat=seat, amount=amount, player=player))

        rng = random.Random(self.table_ids[0])
        for table_id, game in zip(self.table_ids, GAMES):
            reply = await floor.send(table_id, OpenTable(table_id=table_id, config=config(game)), timeout=5.0)
            assert reply.ok, reply
            for seat in range(self.bots_per_table):
                client = await self._client("player", f"{table_id}-p{seat}")
                self.bots.append(Bot(client, table_id, seat, random.Random(rng.getrandbits(64)), bank=bank,
                                     record=False, count_hands=seat == 0))
        self.sleeper = sleeper = await self._client("player", f"{self.table_ids[0]}-sleeper")
        reply = await sleeper.send(self.table_ids[0], SitDown(seat=SLEEPER_SEAT, player=sleeper.name))
        assert reply.ok, reply
        assert (await bank(self.table_ids[0], SLEEPER_SEAT, 100 * STAKES.small_bet)).ok
        await asyncio.gather(*(bot.start() for bot in self.bots))

    async def sit_out(self) -> None:
        """Everyone sits out: no new hand starts.  The bots play the hands in play to their
        end (paused, each turn left would wait a timeout: some seconds a hand); the
        sleeper's turns time out."""
        replies = await asyncio.gather(*(bot.sit_out() for bot in self.bots))
        replies.append(await self.sleeper.send(self.table_ids[0], SitOut(seat=SLEEPER_SEAT, sitting_out=True)))
        assert all(r is not None and (r.ok or code_of(r) == NO_CHANGE) for r in replies), replies

    async def stop(self) -> None:
        await asyncio.gather(*(bot.stop() for bot in self.bots), return_exceptions=True)
        for nc in self._connections:
            with contextlib.suppress(Exception):
                await nc.drain()


# -------------------------------------------------------------------------- recorder


@dataclass
class Recorder:
    """Every public event (arrival time of its message by table and version) and every
    value the lobby stored (a KV watch: arrival time, revision, entry)."""

    public: dict[str, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))
    values: dict[str, list[tuple[float, int, LobbyEntry]]] = field(default_factory=lambda: defaultdict(list))
    raw: list[bytes] = field(default_factory=list)

    def latest(self, table_id: str) -> LobbyEntry | None:
        values = self.values.get(table_id)
        return values[-1][2] if values else None

    def lags_ms(self) -> list[float]:
        """For each public event: the time until the lobby stored its table's entry at
        that version or later (as ``bench lobby`` measures it)."""
        stored = {t: [(at, e.version) for at, _, e in values] for t, values in self.values.items()}
        return lags_ms(self.public, stored)


@contextlib.asynccontextmanager
async def recording(stack: Stack) -> Any:
    """Record while inside: public messages as the spectator gets them, stored values as
    a service watching the bucket sees them."""
    recorder = Recorder()
    spectator = await stack.connect_as("spectator", "public")
    auditor = await stack.connect_as("service", "lobby")

    async def public(msg: Any) -> None:
        arrived, now = recorder.public[subjects.table_of_public(msg.subject)], time.monotonic()
        for version, _ in events_of(msg):
            arrived.setdefault(version, now)

    sub = await spectator.subscribe(subjects.all_public_events(), cb=public)
    kv = await _bucket(auditor)
    watcher = await kv.watchall()

    async def follow() -> None:
        async for update in watcher:
            if update is not None and update.value:
                recorder.raw.append(update.value)
                recorder.values[update.key].append((time.monotonic(), update.revision, decode(update.value)))

    following = asyncio.create_task(follow())
    try:
        yield recorder
    finally:
        await watcher.stop()
        await following
        await sub.unsubscribe()
        await spectator.drain()
        await auditor.drain()


async def _bucket(nc: Any, wait: float = 20.0) -> Any:
    """The lobby's bucket (a lobby that just started may not have made it yet)."""
    import nats.js.errors

    deadline = time.monotonic() + wait
    while True:
        try:
            return await nc.jetstream().key_value(LOBBY_BUCKET)
        except nats.js.errors.BucketNotFoundError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


# ------------------------------------------------------------------------ the truth


def as_stored(events: list[Event], versions: set[int]) -> dict[int, LobbyEntry]:
    """What the lobby must show of a table whose stored events are ``events``, at each
    of ``versions``: the table's own view then, as a spectator sees it."""
    table, out = Table(), {}
    for version, event in enumerate(events, start=1):
        table.apply(event)
        if version in versions:
            out[version] = from_view(views.table_view(table, None), None, 0, 0)
    return out


def seen(entry: LobbyEntry) -> dict[str, Any]:
    """The part of an entry the table's view tells: seats, stacks, the running hand."""
    hand = entry.hand if entry.running else None
    return {
        "version": entry.version,
        "seats": [(r.seat, r.player, r.stack, r.sitting_out) for r in entry.players],
        "hand": None if hand is None else (
            hand.hand_no, hand.street, hand.pot, hand.community,
            [(p.seat, p.stack, p.bet, p.up, p.down, p.shown, p.folded, p.all_in) for p in hand.players]),
    }


def hidden_by_version(events: list[Event]) -> list[set[str]]:
    """For each version (index version-1): the face-down cards of the hand in play that
    nobody may see (dealt down, not shown at the showdown, not turned up; a folded
    hand's stay hidden after the hand)."""
    out: list[set[str]] = []
    hidden: set[str] = set()
    for event in events:
        if isinstance(event, HandStarted):
            hidden = set()
        elif isinstance(event, CardsDealt):
            hidden |= {d.card for d in event.cards if not d.up and d.card is not None}
        elif isinstance(event, HandShown):
            hidden -= set(event.cards)
        elif isinstance(event, LastCardsExposed):
            hidden -= {d.card for d in event.turned if d.card is not None}
        out.append(set(hidden))
    return out


async def until(check: Callable[[], bool], timeout: float, poll: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(poll)
    return True


@contextlib.contextmanager
def running(stack: Stack) -> Iterator[Stack]:
    stack.start()
    try:
        yield stack
    finally:
        problems = stack.stop()
        assert not problems, problems
