"""The fault drill: one room under bot load, on embedded servers of its own, and the
faults in turn: ``kill -9`` of each service the room runs, PostgreSQL stopped and
started, NATS stopped and started (same port, same JetStream folder).  After each:
every table deals a new hand, the killed service is running and answering again, no
stored event is lost or doubled on the public stream, the chips add up; and how long
recovery took.  The fault tests (tests/tools/faults/) and ``studroom bench faults`` run
it; what each fault promises and how recovery is measured: docs/design/resilience.md.

Its parts: :mod:`.fault` (the faults and how each is injected), :mod:`.checks` (how
the drill knows the room is back), :mod:`.consistency` (the judge: the stores against
the public stream, and the chips), :mod:`.report` (the outcomes and their table)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studroom.projections.ledger.room_check import chip_check
from studroom.services.room.bots import Room
from studroom.services.room.plans import plan_tables, table_ids
from studroom.services.room.room import SUPERVISE_EVERY
from studroom.services.runtime.processes import process
from studroom.services.runtime.processes.supervisor import SERVE, Services, child_env
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.runtime.servers.server_process import ServerProcess
from studroom.services.store.layout import store_schemas
from studroom.services.table.partitions import lease_owners
from studroom.services.wire.partitioning import partition_of

from .checks import DATABASE_ERRORS, PROBE, Checks, all_running, until
from .consistency import Consistency
from .fault import BASELINE, KILL, SERVER, Fault, faults_of, pid_of, stop_start
from .report import DrillReport, Outcome, line

AUDITOR = "projections"    # the service identity the drill reads the public stream as

Say = Callable[[str], Any]


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


async def _supervise(services: Services) -> None:
    """What the room does while it plays: start again the services that died."""
    while True:
        services.supervise()
        await asyncio.sleep(SUPERVISE_EVERY)


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
        self.checks = Checks(self.postgres, self._schemas(), self.tables, options.limit, probe,
                             player=plans[0].seats[min(plans[0].seats)])
        self.consistency = Consistency(self.postgres.url, self._schemas(), self.tables)
        outcomes: list[Outcome] = []
        supervising = asyncio.create_task(_supervise(services))
        try:
            started = time.monotonic()
            await room.start()
            await self.checks.dealing(await self.checks.after(time.monotonic(), booked=False), 60.0)
            self.say(f"  the room plays ({time.monotonic() - started:.1f} s to open, seat and deal)")
            for round_no in range(1, options.rounds + 1):
                for fault in [Fault("baseline (no fault)", BASELINE), *faults]:
                    self.say(f"  {fault.name} ...")
                    outcomes.append(await self._measure(fault, services))
                    outcomes[-1].round = round_no
                    self.say("    " + line(outcomes[-1]))
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
        """Inject ``fault``, then wait for every table to deal again and for all it took
        away to be back; check the stores against the stream."""
        outcome = Outcome(fault)
        limit = self.options.limit
        if await until(all_running(services), time.monotonic() + limit) is None:
            outcome.problems.append(f"down before the fault: {', '.join(services.dead())}")
        seen_problems = len(self.consistency.problems)
        running = {name: pid_of(services, name) for name, _ in services.commands()}
        target, killed = await self._inject(fault, services, outcome)
        ended = time.monotonic()
        after = await self.checks.after(ended)
        dealt, back = await asyncio.gather(self.checks.dealing(after, limit),
                                           self.checks.back(fault, services, killed, after, ended + limit))
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
                           if name != target and pid_of(services, name) != pid)
        if restarted:
            outcome.notes.append(f"started again during the fault: {', '.join(restarted)}")
        await self._consistent(outcome, seen_problems)
        return outcome

    async def _inject(self, fault: Fault, services: Services, outcome: Outcome) -> tuple[str, int | None]:
        """Kill the child or take the server down (and up again): the child killed, its pid."""
        target, killed = fault.target, None
        if fault.kind == KILL:
            if fault.service == "table":
                target, serving = await self._busiest_table_service(services, target)
                outcome.notes.append(f"killed {target}, serving {', '.join(serving) or 'no table'}")
            killed = pid_of(services, target)
            if killed is None:
                outcome.problems.append(f"{target} was not running")
            else:
                os.killpg(killed, signal.SIGKILL)
                self.kills[target] += 1
        elif fault.kind == SERVER:
            problem = await asyncio.to_thread(stop_start, self._server(fault.target), fault.how, self.options.outage)
            if problem:
                outcome.problems.append(problem)
        return target, killed

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

    async def _consistent(self, outcome: Outcome, seen_problems: int) -> None:
        """The stores against the stream up to now, and the chips."""
        c = self.consistency
        try:
            await self.checks.retrying(c.read_stores)
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
            await self.checks.retrying(self.consistency.read_stores)
            total = sum(self.consistency.stored_versions().values())
            if total != last:
                stable, last = time.monotonic(), total
        await self._consistent(outcome, seen_problems)
        c = self.consistency
        extra = {t: (v, c.stored_versions()[t]) for t, v in c.published.items() if v > c.stored_versions()[t]}
        outcome.problems += [f"{t}: the stream holds version {v}, the store {n}" for t, (v, n) in extra.items()]
        return outcome
