"""How the drill knows the room is back after a fault: what it reads from the stores
(each store's last notification, the first hand each table dealt since, how far the
ledger booked) and what it asks the services (the killed child running again, each
service with a probe following the tables again), polled until a deadline."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from eventsourcing.persistence import PersistenceError
from eventsourcing.utils import get_topic
from psycopg import sql
from studroom.domain.events import CardsDealt, HandStarted
from studroom.projections.history.protocol import Hands
from studroom.projections.history.protocol import decode_reply as decode_history
from studroom.projections.history.protocol import encode as encode_history
from studroom.projections.ledger.schema import LEDGER_SCHEMA
from studroom.projections.lobby.queries import LobbyQuery, decode_answer, encode_query
from studroom.services.client.cashier import CashierClient
from studroom.services.runtime.processes.supervisor import Services
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.store.inspect import last_notification_ids
from studroom.services.store.postgres import DEFAULT_TABLE
from studroom.services.wire import subjects
from studroom.services.wire.cashier_protocol import Balance

from .fault import BASELINE, KILL, Fault, pid_of

PROBE = "drill"            # the drill's operator identity: asks the cashier, lobby and history
PROBED = ("cashier", "lobby", "history", "ledger")     # services with a probe of their own
DATABASE_ERRORS = (psycopg.Error, PersistenceError)     # the stores' reads raise the latter

T = TypeVar("T")
Check = Callable[[], Any]          # a coroutine function: is it back?


@dataclass
class After:
    """A fault's end: when, each store's last notification id and the ledger's booked
    position then; the first hand each table dealt since (filled as they come)."""

    ended: float
    marks: dict[str, int]
    booked: int
    hands: dict[str, int] = field(default_factory=dict)


async def until(check: Check, deadline: float) -> float | None:
    """When ``check()`` first said yes; None: not by ``deadline``."""
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if await check():
                return time.monotonic()
        await asyncio.sleep(0.1)
    return None


def all_running(services: Services) -> Check:
    async def check() -> bool:
        return not services.dead()
    return check


def restarted(services: Services, name: str, killed: int | None) -> Check:
    async def check() -> bool:
        pid = pid_of(services, name)
        return pid is not None and pid != killed
    return check


class Checks:
    """The reads and probes of one drill: its stores, its tables, the probe's
    connection and the player it asks about."""

    def __init__(self, postgres: EmbeddedPostgres, schemas: Sequence[str], tables: Sequence[str], limit: float,
                 probe: Any, player: str) -> None:
        self.postgres = postgres
        self.schemas = list(schemas)
        self.tables = list(tables)
        self.limit = limit
        self.probe = probe
        self.player = player

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.postgres.url, autocommit=True, connect_timeout=3)

    # ------------------------------------------------------------------ the stores

    def marks(self) -> dict[str, int]:
        """Each store's last notification id now."""
        with self._connect() as conn:
            return last_notification_ids(conn, self.schemas)

    def booked(self) -> int:
        """How far the ledger has booked (the sum of its positions in the stores)."""
        with self._connect() as conn:
            row = conn.execute(sql.SQL("SELECT coalesce(sum(position), 0) FROM {}.positions").format(
                sql.Identifier(LEDGER_SCHEMA))).fetchone()
        return int(row[0]) if row else 0

    def new_hands(self, marks: dict[str, int]) -> dict[str, int]:
        """The tables that started a hand after ``marks`` and dealt its cards: the hand's number."""
        query = ("SELECT s.originator_id, min((convert_from(s.state, 'UTF8')::json->>'hand_no')::int) FROM {t} s "
                 "WHERE s.notification_id > %s AND s.topic = %s "
                 "AND EXISTS (SELECT 1 FROM {t} d WHERE d.originator_id = s.originator_id "
                 "AND d.originator_version > s.originator_version AND d.topic = %s) GROUP BY s.originator_id")
        found: dict[str, int] = {}
        with self._connect() as conn:
            for schema, mark in marks.items():
                statement = sql.SQL(query).format(t=sql.Identifier(schema, DEFAULT_TABLE))
                rows = conn.execute(statement, (mark, get_topic(HandStarted), get_topic(CardsDealt))).fetchall()
                found |= {table_id: hand_no for table_id, hand_no in rows}
        return found

    async def retrying(self, read: Callable[[], T]) -> T:
        """``read()`` in a thread, again after a database error until the limit (a
        server just back may refuse a connection or two)."""
        deadline = time.monotonic() + self.limit
        while True:
            try:
                return await asyncio.to_thread(read)
            except DATABASE_ERRORS:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.2)

    async def after(self, ended: float, *, booked: bool = True) -> After:
        """The marks to measure a fault's recovery from (``booked``: the ledger's position too)."""
        return After(ended, await self.retrying(self.marks), await self.retrying(self.booked) if booked else 0)

    async def dealing(self, after: After, limit: float) -> dict[str, float]:
        """When each table dealt a new hand (polled every 0.1 s, until ``limit``); its
        number goes to ``after.hands``."""
        dealt: dict[str, float] = {}
        while len(dealt) < len(self.tables) and time.monotonic() - after.ended < limit:
            with contextlib.suppress(*DATABASE_ERRORS):
                now = time.monotonic()
                for table_id, hand_no in (await asyncio.to_thread(self.new_hands, after.marks)).items():
                    if table_id in self.tables and table_id not in dealt:
                        dealt[table_id], after.hands[table_id] = now, hand_no
            await asyncio.sleep(0.1)
        return dealt

    # ------------------------------------------------------------------ the services

    async def back(self, fault: Fault, services: Services, killed: int | None, after: After,
                   deadline: float) -> dict[str, float | None]:
        """When each thing the fault took away was back: the killed child running again
        (the room restarts it) and following the tables again; after a server fault,
        every child running and every service with a probe following."""
        if fault.kind == BASELINE:
            return {}
        checks: dict[str, Check] = {}
        if fault.kind == KILL:
            checks[f"{fault.target} (started again)"] = restarted(services, fault.target, killed)
            if fault.service in PROBED:
                checks[f"{fault.service} (following)"] = self.following(fault.service, after)
        else:
            checks["every service (running)"] = all_running(services)
            checks |= {f"{s} (following)": self.following(s, after) for s in PROBED}
        results = await asyncio.gather(*(until(check, deadline) for check in checks.values()))
        return dict(zip(checks, results))

    def following(self, service: str, after: After) -> Check:
        """A probe: the cashier answers a balance; the lobby shows every table at its first
        hand after the fault (or later); the history holds the probe player's hand of
        that time (or a later one); the ledger's books have advanced."""
        nc, player, table_id = self.probe, self.player, self.tables[0]

        async def cashier() -> bool:
            client = CashierClient(nc, "operator", PROBE, retry_for=0.0)
            return (await client.request(Balance(player=player), timeout=1.0)).ok

        async def lobby() -> bool:
            msg = await nc.request(subjects.lobby_query("operator", PROBE), encode_query(LobbyQuery()), timeout=1.0)
            answer = decode_answer(msg.data)
            shown = {entry.table_id: entry.hand_no for entry in answer.tables}
            return answer.ok and len(after.hands) == len(self.tables) and all(
                shown.get(t, 0) >= hand_no for t, hand_no in after.hands.items())

        async def history() -> bool:
            msg = await nc.request(subjects.history_requests("operator", PROBE),
                                   encode_history(Hands(player=player, table_id=table_id, limit=1)), timeout=1.0)
            reply = decode_history(msg.data)
            return reply.ok and table_id in after.hands and bool(reply.hands) and \
                reply.hands[0].hand_no >= after.hands[table_id]

        async def ledger() -> bool:
            return await asyncio.to_thread(self.booked) > after.booked

        return {"cashier": cashier, "lobby": lobby, "history": history, "ledger": ledger}[service]
