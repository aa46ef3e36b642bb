"""The fault drill: one room under bot load, on embedded servers of its own, and the
faults in turn: ``kill -9`` of each service the room runs, PostgreSQL stopped and
started, NATS stopped and started (same port, same JetStream folder).  After each:
every table deals a new hand, the killed service is running and answering again, no
stored event is lost or doubled on the public stream, the chips add up; and how long
recovery took.  The fault tests (tests/faults/) and ``studroom bench faults`` run it;
what each fault promises and how recovery is measured: docs/design/resilience.md."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from eventsourcing.persistence import PersistenceError
from eventsourcing.utils import get_topic
from psycopg import sql
from studroom.domain.events import CardsDealt, HandStarted
from studroom.projections.history.protocol import Hands
from studroom.projections.history.protocol import decode_reply as decode_history
from studroom.projections.history.protocol import encode as encode_history
from studroom.projections.ledger.room_check import chip_check
from studroom.projections.ledger.schema import LEDGER_SCHEMA
from studroom.projections.lobby.queries import LobbyQuery, decode_answer, encode_query

from studroom.services.client.cashier import CashierClient
from studroom.services.wire.cashier_protocol import Balance
from studroom.services.runtime.processes import process
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.runtime.servers.server_process import ServerProcess
from studroom.services.runtime.processes.supervisor import SERVE, Services, child_env
from studroom.services.store.inspect import last_notification_ids
from studroom.services.store.layout import store_schemas
from studroom.services.store.postgres import DEFAULT_TABLE
from studroom.services.table.partitions import lease_owners
from studroom.services.wire import subjects
from studroom.services.wire.partitioning import partition_of
from studroom.services.room.bots import Room
from studroom.services.room.consistency import Consistency
from studroom.services.room.plans import plan_tables, table_ids
from studroom.services.room.room import SUPERVISE_EVERY

BASELINE = "baseline"
KILL = "kill"
SERVER = "server"
STOP, CRASH = "stop", "kill -9"           # how a server goes down: a clean stop, or SIGKILL
PROBE = "drill"            # the drill's operator identity: asks the cashier, lobby and history
AUDITOR = "projections"    # the service identity the drill reads the public stream as
PROBED = ("cashier", "lobby", "history", "ledger")     # services with a probe of their own

Say = Callable[[str], Any]
T = TypeVar("T")
DATABASE_ERRORS = (psycopg.Error, PersistenceError)     # the stores' reads raise the latter


@dataclass(frozen=True)
class DrillOptions:
    tables: int = 4
    bots_per_table: int = 3
    instances: int = 2           # table-service processes
    stores: int = 2
    pace_ms: int = 10            # the bots' thinking time
    pause_ms: int = 200          # between hands: the timer service ends the pause
    outage: float = 2.0          # seconds a server stays down
    limit: float = 30.0          # seconds recovery may take before the fault counts as failed (liveness)
    rounds: int = 1              # the faults, one after another, this many times
    stream_wait: float = 20.0    # seconds the stream may lag the stores before an event counts as lost
    seed: int = 12


@dataclass(frozen=True)
class Fault:
    name: str          # as the report prints it
    kind: str          # BASELINE, KILL or SERVER
    target: str = ""   # the child process killed, or "postgres" / "nats"
    service: str = ""  # what the killed child serves (table, relay, ...)
    how: str = ""      # how a server goes down: STOP or CRASH


@dataclass
class Outcome:
    fault: Fault
    recovery: float | None = None      # seconds from the fault's end until all was back
    dealing: float | None = None       # ... until every table dealt a new hand
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    round: int = 1

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class After:
    """A fault's end: when, each store's last notification id and the ledger's booked
    position then; the first hand each table dealt since (filled as they come)."""

    ended: float
    marks: dict[str, int]
    booked: int
    hands: dict[str, int] = field(default_factory=dict)


@dataclass
class DrillReport:
    outcomes: list[Outcome]
    events: int = 0                    # stored, on the drill's tables
    published: int = 0                 # on the public stream
    duplicates: int = 0
    hands: int = 0

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]


def faults_of(services: Services) -> list[Fault]:
    """The faults, in the order the drill injects them: a kill of the first child of
    each service the room runs, then PostgreSQL, then NATS."""
    out, seen = [], set()
    for name, command in services.commands():
        service = command[len(SERVE)]
        if service not in seen:
            seen.add(service)
            out.append(Fault(f"kill -9 {service}", KILL, name, service))
    for server in ("postgres", "nats"):
        out.append(Fault(f"{server} stop/start", SERVER, server, how=STOP))
        out.append(Fault(f"{server} kill -9/start", SERVER, server, how=CRASH))
    return out


async def _supervise(services: Services) -> None:
    """What the room does while it plays: start again the services that died."""
    while True:
        services.supervise()
        await asyncio.sleep(SUPERVISE_EVERY)


def _pid_of(services: Services, name: str) -> int | None:
    """The pid of the running child ``name`` (None: not running)."""
    for child, proc, _ in services.procs:
        if child == name and proc.poll() is None:
            return proc.pid
    return None


class Drill:
    """The room, its servers and the faults (blocking: :meth:`run`)."""

    def __init__(self, data_dir: Path, options: DrillOptions = DrillOptions(),
                 say: Say = lambda _text: None) -> None:
        self.data_dir = data_dir
        self.options = options
        self.say = say
        self.tables = table_ids(options.tables, prefix="f")
        self.postgres: EmbeddedPostgres | None = None
        self.nats: EmbeddedNats | None = None
        self.kills: Counter[str] = Counter()        # child -> times the drill killed it

    # ------------------------------------------------------------------ the run

    def run(self, only: Sequence[str] = ()) -> DrillReport:
        """Start the servers and the room, inject the faults (those named in ``only``,
        by kind or service: all when empty), check the end; the servers stop after."""
        options = self.options
        with EmbeddedPostgres(self.data_dir) as postgres, EmbeddedNats(self.data_dir) as nats:
            self.postgres, self.nats = postgres, nats
            services = Services(child_env(nats.url, postgres.url, self.data_dir), self.data_dir / "logs",
                                instances=options.instances, stores=options.stores, timers=True,
                                authority=nats.authority, pause_ms=options.pause_ms)
            faults = [f for f in faults_of(services) if not only or f.service in only or f.target in only]
            self.say(f"fault drill: {options.tables} tables x {options.bots_per_table} bots, pace "
                     f"{options.pace_ms} ms, pause between hands {options.pause_ms} ms, {options.instances} "
                     f"table services, {options.stores} stores; "
                     f"{len(faults)} faults")
            services.start()
            stopped = False
            try:
                report = asyncio.run(self._drill(services, faults))
                final = report.outcomes[-1]
                final.notes += services.stop()
                stopped = True
                chips = chip_check(postgres.url, self._schemas())
                if not chips.conserved:
                    final.problems.append(f"chips not conserved (books against stores): {chips.summary()}; "
                                          + "; ".join(chips.bad[:5]))
                report.hands = chips.hands
            finally:
                if not stopped:
                    services.stop()
        return report

    def _schemas(self) -> list[str]:
        return store_schemas(self.options.stores)

    async def _drill(self, services: Services, faults: list[Fault]) -> DrillReport:
        assert self.nats is not None and self.postgres is not None and self.nats.authority is not None
        authority = self.nats.authority
        options = self.options
        plans = plan_tables(self.tables, options.bots_per_table, {})
        room = Room(self.nats.url, plans, authority=authority, pace_ms=options.pace_ms, seed=options.seed)
        audit = await process.connect(self.nats.url, "studroom-drill-audit",
                                      creds=authority.ensure("service", AUDITOR))
        probe = await process.connect(self.nats.url, "studroom-drill-probe", creds=authority.ensure("operator", PROBE))
        self.js = audit.jetstream(timeout=5.0)
        self.probe = probe
        self.player = plans[0].seats[min(plans[0].seats)]
        self.consistency = Consistency(self.postgres.url, self._schemas(), self.tables)
        outcomes: list[Outcome] = []
        supervising = asyncio.create_task(_supervise(services))
        try:
            started = time.monotonic()
            await room.start()
            await self._dealing(After(time.monotonic(), await self._retrying(self._marks), 0), 60.0)
            self.say(f"  the room plays ({time.monotonic() - started:.1f} s to open, seat and deal)")
            for round_no in range(1, options.rounds + 1):
                for fault in [Fault("baseline (no fault)", BASELINE), *faults]:
                    self.say(f"  {fault.name} ...")
                    outcomes.append(await self._measure(fault, services))
                    outcomes[-1].round = round_no
                    self.say("    " + _line(outcomes[-1]))
            outcomes.append(await self._final(room, services))
        finally:
            supervising.cancel()
            await room.stop()
            for nc in (audit, probe):
                with contextlib.suppress(Exception):
                    await nc.close()
        c = self.consistency
        return DrillReport(outcomes, events=sum(c.stored_versions().values()),
                           published=sum(c.published.values()), duplicates=c.duplicates)

    # ------------------------------------------------------------------ one fault

    async def _measure(self, fault: Fault, services: Services) -> Outcome:
        outcome = Outcome(fault)
        if await self._until(self._all_running(services), time.monotonic() + self.options.limit) is None:
            outcome.problems.append(f"down before the fault: {', '.join(services.dead())}")
        seen_problems = len(self.consistency.problems)
        running = {name: _pid_of(services, name) for name, _ in services.commands()}
        killed: int | None = None
        target = fault.target
        if fault.kind == KILL:
            if fault.service == "table":
                target, serving = await self._busiest_table_service(services, target)
                outcome.notes.append(f"killed {target}, serving {', '.join(serving) or 'no table'}")
            killed = _pid_of(services, target)
            if killed is None:
                outcome.problems.append(f"{target} was not running")
            else:
                os.killpg(killed, signal.SIGKILL)
                self.kills[target] += 1
        elif fault.kind == SERVER:
            problem = await asyncio.to_thread(self._stop_start, self._server(fault.target), fault.how)
            if problem:
                outcome.problems.append(problem)
        ended = time.monotonic()
        limit = self.options.limit
        after = After(ended, await self._retrying(self._marks), await self._retrying(self._booked))
        dealt, back = await asyncio.gather(self._dealing(after, limit),
                                           self._back(fault, services, killed, after, ended + limit))
        if len(dealt) < len(self.tables):
            late = sorted(set(self.tables) - set(dealt))
            outcome.problems.append(f"no new hand within {limit:g} s at {', '.join(late)}")
        else:
            outcome.dealing = max(dealt.values()) - ended
        for what, at in back.items():
            if at is None:
                outcome.problems.append(f"{what} not back within {limit:g} s")
        if outcome.dealing is not None and all(at is not None for at in back.values()):
            outcome.recovery = max([outcome.dealing, *(at - ended for at in back.values() if at is not None)])
        restarted = sorted(name for name, pid in running.items()
                           if name != target and _pid_of(services, name) != pid)
        if restarted:
            outcome.notes.append(f"started again during the fault: {', '.join(restarted)}")
        await self._consistent(outcome, seen_problems)
        return outcome

    async def _busiest_table_service(self, services: Services, first: str) -> tuple[str, list[str]]:
        """The table-service instance that serves most of the drill's tables now (by
        their partitions' leases; killing it stops tables), and those tables."""
        try:
            owners = await lease_owners(self.js)
        except Exception:  # noqa: BLE001 (a slow answer: the first instance then)
            return first, []
        serving: dict[str, list[str]] = {}
        for table_id in self.tables:
            serving.setdefault(owners.get(partition_of(table_id), ""), []).append(table_id)
        busiest = max(serving, key=lambda i: len(serving[i]))
        for name, command in services.commands():
            if command[len(SERVE)] == "table" and command[command.index("--instance-id") + 1] == busiest:
                return name, serving[busiest]
        return first, []

    def _server(self, name: str) -> ServerProcess:
        server = self.postgres if name == "postgres" else self.nats
        assert server is not None
        return server

    def _stop_start(self, server: ServerProcess, how: str) -> str | None:
        """Stop (or kill) the server, leave it down for the outage, start it again: a
        problem when it comes back elsewhere (its clients know one address)."""
        port = server.port
        if how == CRASH:
            server.kill()
        else:
            server.stop()
        time.sleep(self.options.outage)
        server.start()
        if server.port != port:
            return f"{server.name} came back on port {server.port}, not {port}"
        return None

    async def _consistent(self, outcome: Outcome, seen_problems: int) -> None:
        """The stores against the stream up to now, and the chips."""
        c = self.consistency
        try:
            await self._retrying(c.read_stores)
        except DATABASE_ERRORS as e:
            outcome.problems.append(f"the stores could not be read: {e}")
            return
        lacking = await c.stream_has(self.js, c.stored_versions(), self.options.stream_wait)
        for table_id, (first, last) in lacking.items():
            outcome.problems.append(f"lost: {table_id} versions {first}..{last} stored, not on the public "
                                    f"stream after {self.options.stream_wait:g} s")
        outcome.problems += c.problems[seen_problems:]
        chips = [bad for bad in c.chip_problems() if bad not in c.problems]
        c.problems += chips
        outcome.problems += chips

    async def _final(self, room: Room, services: Services) -> Outcome:
        """No child died but those killed; the bots stop; every stored event is on the
        stream exactly once."""
        outcome = Outcome(Fault("after all faults: stores == stream, chips", BASELINE), round=0)
        for name, restarts in sorted(services.restarts().items()):
            if restarts > self.kills[name]:
                outcome.problems.append(f"{name} died {restarts - self.kills[name]} time(s) unkilled "
                                        f"(started again {restarts} times, killed {self.kills[name]})")
        seen_problems = len(self.consistency.problems)
        for bot in room.bots:
            bot.pause()
        stable, last = time.monotonic(), -1
        while time.monotonic() - stable < 1.5:          # the tables wait on paused bots
            await asyncio.sleep(0.25)
            await self._retrying(self.consistency.read_stores)
            total = sum(self.consistency.stored_versions().values())
            if total != last:
                stable, last = time.monotonic(), total
        await self._consistent(outcome, seen_problems)
        c = self.consistency
        extra = {t: (v, c.stored_versions()[t]) for t, v in c.published.items() if v > c.stored_versions()[t]}
        outcome.problems += [f"{t}: the stream holds version {v}, the store {n}" for t, (v, n) in extra.items()]
        return outcome

    # ------------------------------------------------------------------ measures

    def _marks(self) -> dict[str, int]:
        """Each store's last notification id now."""
        with psycopg.connect(self._require_postgres().url, autocommit=True, connect_timeout=3) as conn:
            return last_notification_ids(conn, self._schemas())

    def _booked(self) -> int:
        """How far the ledger has booked (the sum of its positions in the stores)."""
        with psycopg.connect(self._require_postgres().url, autocommit=True, connect_timeout=3) as conn:
            row = conn.execute(sql.SQL("SELECT coalesce(sum(position), 0) FROM {}.positions").format(
                sql.Identifier(LEDGER_SCHEMA))).fetchone()
        return int(row[0]) if row else 0

    async def _retrying(self, read: Callable[[], T]) -> T:
        """``read()`` in a thread, again after a database error until the limit (a
        server just back may refuse a connection or two)."""
        deadline = time.monotonic() + self.options.limit
        while True:
            try:
                return await asyncio.to_thread(read)
            except DATABASE_ERRORS:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.2)

    def _require_postgres(self) -> EmbeddedPostgres:
        assert self.postgres is not None
        return self.postgres

    def _new_hands(self, marks: dict[str, int]) -> dict[str, int]:
        """The tables that started a hand after ``marks`` and dealt its cards: the hand's number."""
        query = ("SELECT s.originator_id, min((convert_from(s.state, 'UTF8')::json->>'hand_no')::int) FROM {t} s "
                 "WHERE s.notification_id > %s AND s.topic = %s "
                 "AND EXISTS (SELECT 1 FROM {t} d WHERE d.originator_id = s.originator_id "
                 "AND d.originator_version > s.originator_version AND d.topic = %s) GROUP BY s.originator_id")
        found: dict[str, int] = {}
        with psycopg.connect(self._require_postgres().url, autocommit=True, connect_timeout=3) as conn:
            for schema, mark in marks.items():
                statement = sql.SQL(query).format(t=sql.Identifier(schema, DEFAULT_TABLE))
                rows = conn.execute(statement, (mark, get_topic(HandStarted), get_topic(CardsDealt))).fetchall()
                found |= {table_id: hand_no for table_id, hand_no in rows}
        return found

    async def _dealing(self, after: After, limit: float) -> dict[str, float]:
        """When each table dealt a new hand (polled every 0.1 s, until ``limit``); its
        number goes to ``after.hands``."""
        dealt: dict[str, float] = {}
        while len(dealt) < len(self.tables) and time.monotonic() - after.ended < limit:
            with contextlib.suppress(*DATABASE_ERRORS):
                now = time.monotonic()
                for table_id, hand_no in (await asyncio.to_thread(self._new_hands, after.marks)).items():
                    if table_id in self.tables and table_id not in dealt:
                        dealt[table_id], after.hands[table_id] = now, hand_no
            await asyncio.sleep(0.1)
        return dealt

    async def _back(self, fault: Fault, services: Services, killed: int | None, after: After,
                    deadline: float) -> dict[str, float | None]:
        """When each thing the fault took away was back: the killed child running again
        (the room restarts it) and following the tables again; after a server fault,
        every child running and every service with a probe following."""
        if fault.kind == BASELINE:
            return {}
        checks: dict[str, Any] = {}
        if fault.kind == KILL:
            checks[f"{fault.target} (started again)"] = self._restarted(services, fault.target, killed)
            if fault.service in PROBED:
                checks[f"{fault.service} (following)"] = self._following(fault.service, after)
        else:
            checks["every service (running)"] = self._all_running(services)
            checks |= {f"{s} (following)": self._following(s, after) for s in PROBED}
        names = list(checks)
        results = await asyncio.gather(*(self._until(check, deadline) for check in checks.values()))
        return dict(zip(names, results))

    async def _until(self, check: Callable[[], Any], deadline: float) -> float | None:
        """When ``check()`` (a coroutine function) first said yes; None: not by ``deadline``."""
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                if await check():
                    return time.monotonic()
            await asyncio.sleep(0.1)
        return None

    def _restarted(self, services: Services, name: str, killed: int | None) -> Callable[[], Any]:
        async def check() -> bool:
            pid = _pid_of(services, name)
            return pid is not None and pid != killed
        return check

    def _all_running(self, services: Services) -> Callable[[], Any]:
        async def check() -> bool:
            return not services.dead()
        return check

    def _following(self, service: str, after: After) -> Callable[[], Any]:
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
            return await asyncio.to_thread(self._booked) > after.booked

        return {"cashier": cashier, "lobby": lobby, "history": history, "ledger": ledger}[service]


def _line(outcome: Outcome) -> str:
    took = "-" if outcome.recovery is None else f"{outcome.recovery:.1f} s"
    return f"recovery {took}: " + ("ok" if outcome.ok else "FAILED: " + "; ".join(outcome.problems))


def _rounds_table(outcomes: list[Outcome], width: int) -> list[str]:
    """Each fault over the rounds: the median and the longest recovery, failures."""
    lines = [f"{'over the rounds':<{width}}  {'median s':>10}  {'max s':>11}  failed",
             "-" * (width + 36)]
    by_name: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.round:
            by_name.setdefault(o.fault.name, []).append(o)
    for name, runs in by_name.items():
        took = [o.recovery for o in runs if o.recovery is not None]
        median = f"{statistics.median(took):.2f}" if took else "-"
        longest = f"{max(took):.2f}" if took else "-"
        lines.append(f"{name:<{width}}  {median:>10}  {longest:>11}  {sum(not o.ok for o in runs)} of {len(runs)}")
    return lines


def report_table(report: DrillReport) -> str:
    """The recovery time of each fault, beside the baseline (for the README)."""
    rounds = any(o.round > 1 for o in report.outcomes)

    def name(o: Outcome) -> str:
        return o.fault.name + (f" #{o.round}" if rounds and o.round else "")

    width = max(len(name(o)) for o in report.outcomes)
    lines = [f"{'fault':<{width}}  {'recovery s':>10}  {'new hands s':>11}  result",
             "-" * (width + 36)]
    for o in report.outcomes:
        recovery = "-" if o.recovery is None else f"{o.recovery:.2f}"
        dealing = "-" if o.dealing is None else f"{o.dealing:.2f}"
        lines.append(f"{name(o):<{width}}  {recovery:>10}  {dealing:>11}  "
                     + ("ok" if o.ok else "FAILED"))
        lines += [f"    problem: {p}" for p in o.problems[:8]]
        lines += [f"    note: {n}" for n in o.notes]
    if rounds:
        lines += ["", *_rounds_table(report.outcomes, width)]
    lines.append("")
    lines.append(f"events stored {report.events}, on the public stream {report.published}, "
                 f"lost {max(report.events - report.published, 0)}, duplicated {report.duplicates}; "
                 f"{report.hands} hands")
    return "\n".join(lines)
