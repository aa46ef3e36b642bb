"""The room: servers, table services, the relay and bot players, in one command.

    studroom room [--tables N] [--bots-per-table K] [--for SECONDS] [--instances I]
                  [--stores S] [--pace MS] [--data-dir DIR]

1. Servers: embedded NATS (JetStream) and PostgreSQL in the data folder (default
   ``.studroom/``, kept for the next start), unless ``STUDROOM_NATS_URL`` /
   ``STUDROOM_DATABASE_URL`` name external ones.
2. Services, each its own process (``python -m studroom.services.cli serve ...``):
   ``I`` table-service instances (they share the partitions through their KV
   lease) over ``S`` event stores, the relay, and the timer service (a player who
   does not answer in time is timed out; ``--no-timers`` leaves it out).  Their logs go to
   ``<data dir>/logs/``.  They run in their own session: Ctrl-C reaches the room
   only, and the room stops them in order (SIGTERM).
3. Tables ``t01`` .. ``tNN`` (the games in turn: seven card stud, its hi/lo
   version, five card stud), opened unless they exist already (a second start
   reuses them), and ``K`` bots per table (:mod:`studroom.services.players.bot`), all in
   this process (asyncio), one NATS connection per table.
4. A progress line (hands, actions/s, tables, errors) until Ctrl-C / SIGTERM or the
   end of ``--for SECONDS``; then bots stop, services get SIGTERM, a summary is
   printed (hands, actions, errors, events stored, chips conserved) and the
   servers stop.  The data stays.

Chips conserved: every table of the store(s) is replayed (``Table.replay``) and
``sum(ChipsBought) == chips behind on the seats + chips in an unfinished hand +
rake (HandEnded.rake) + cashed out (PlayerLeft.cashed_out)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Self

import msgspec
from studroom.domain import simulate
from studroom.domain.commands import OpenTable
from studroom.domain.config import Rake, TableConfig
from studroom.domain.events import Event
from studroom.domain.games import GAMES
from studroom.domain.table import Table
from studroom.projections.ledger.conservation import ChipCheck, check_tables

from .players.bot import Bot, BotStats, decode_event
from .runtime.settings import (
    DATA_DIR_VAR,
    DATABASE_URL_VAR,
    NATS_URL_VAR,
    Settings,
)
from .runtime.stats import percentile
from .store.inspect import events_stored, load_tables, store_layout_problem
from .store.layout import store_schemas
from .wire import protocol, subjects

ROOM_GAMES = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")
ROOM_RAKE = Rake(basis_points=500, cap=30)          # 5 %, at most 30 chips a hand


def table_ids(count: int, prefix: str = "t") -> list[str]:
    width = max(2, len(str(count)))
    return [f"{prefix}{i:0{width}d}" for i in range(1, count + 1)]


def table_config(index: int) -> TableConfig:
    game = ROOM_GAMES[index % len(ROOM_GAMES)]
    return TableConfig(game=game, stakes=simulate.STAKES, rake=ROOM_RAKE)


def player_name(table_id: str, seat: int) -> str:
    return f"{table_id}-p{seat}"


# --------------------------------------------------------------------- the services


class Services:
    """The table-service instances and the relay, as child processes."""

    def __init__(self, env: dict[str, str], log_dir: Path, *, instances: int, stores: int,
                 relay: bool = True, timers: bool = False, name: str = "room",
                 schema_prefix: str | None = None, lease_bucket: str | None = None) -> None:
        self.env = env
        self.log_dir = log_dir
        self.instances = instances
        self.stores = stores
        self.relay = relay
        self.timers = timers
        self.name = name
        self.schema_prefix = schema_prefix      # tests: stores of their own
        self.lease_bucket = lease_bucket
        self.procs: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        serve = [sys.executable, "-m", "studroom.services.cli", "serve"]
        table_args = ["--stores", str(self.stores)]
        relay_args = ["--stores", str(self.stores), "--log-level", "WARNING"]
        if self.schema_prefix:
            table_args += ["--schema-prefix", self.schema_prefix]
            for schema in store_schemas(self.stores, self.schema_prefix):
                relay_args += ["--schema", schema]
        if self.lease_bucket:
            table_args += ["--lease-bucket", self.lease_bucket]
        for i in range(self.instances):
            instance = f"{self.name}-{i + 1}"
            self._spawn(f"{self.name}-table-{i + 1}",
                        [*serve, "table", "--instance-id", instance,
                         *table_args])
        if self.relay:
            self._spawn(f"{self.name}-relay", [*serve, "relay", *relay_args])
        if self.timers:
            self._spawn(f"{self.name}-timer", [*serve, "timer",
                                               "--instance-id", f"{self.name}-timer",
                                               "--log-level", "WARNING"])

    def _spawn(self, name: str, command: list[str]) -> None:
        log_file = (self.log_dir / f"{name}.log").open("ab")
        log_file.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command)}\n".encode())
        log_file.flush()
        proc = subprocess.Popen(
            command, env=self.env, stdin=subprocess.DEVNULL, stdout=log_file,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.procs.append((name, proc, log_file))

    def dead(self) -> list[str]:
        return [f"{name} (exit {proc.returncode})" for name, proc, _ in self.procs
                if proc.poll() is not None]

    def stop(self, timeout: float = 20.0) -> list[str]:
        """SIGTERM all, wait, SIGKILL what is left. Returns problems (non-zero exits)."""
        problems: list[str] = []
        for _, proc, _ in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, proc, log_file in self.procs:
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                problems.append(f"{name} did not stop on SIGTERM: killed")
                proc.kill()
                proc.wait()
            if proc.returncode not in (0, -signal.SIGTERM):
                problems.append(f"{name} exited with {proc.returncode} (log {self.log_dir / name}.log)")
            log_file.close()
        self.procs.clear()
        return problems

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def child_env(nats_url: str, database_url: str, data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env[NATS_URL_VAR] = nats_url
    env[DATABASE_URL_VAR] = database_url
    env[DATA_DIR_VAR] = str(data_dir)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


# ------------------------------------------------------------------------ the tables


@dataclass
class TablePlan:
    table_id: str
    config: TableConfig
    seats: dict[int, str]                       # seat -> player to run a bot for
    kept: dict[int, int] = field(default_factory=dict)   # seats already held: stack


def plan_tables(ids: Sequence[str], bots_per_table: int,
                existing: dict[str, list[Event]]) -> list[TablePlan]:
    """What to open and whom to seat; tables found in the store are reused, with a
    bot for every seat already taken (so no hand waits on a player nobody plays)."""
    plans = []
    for index, table_id in enumerate(ids):
        events = existing.get(table_id)
        table = Table.replay(events) if events else None
        if table is not None and table.config is not None:
            config = table.config
            seats = {s: st.player for s, st in table.seats.items() if not st.leaving}
            kept = {s: st.stack for s, st in table.seats.items() if not st.leaving}
            if table.hand is not None:   # stacks behind: the hand in play still runs
                kept = {s: (table.hand.players[s].stack if s in table.hand.players else k)
                        for s, k in kept.items()}
        else:
            config, seats, kept = table_config(index), {}, {}
        limit = min(config.seat_count, GAMES[config.game].max_seats)
        for seat in range(config.seat_count):
            if len(seats) >= min(max(bots_per_table, len(kept)), limit):
                break
            seats.setdefault(seat, player_name(table_id, seat))
        plans.append(TablePlan(table_id, config, dict(sorted(seats.items())), kept))
    return plans


async def open_table(client: Any, plan: TablePlan, deadline: float) -> None:
    """OpenTable, retried until the table service answers; ``already_open`` is fine."""
    command = OpenTable(table_id=plan.table_id, config=plan.config)
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            reply = await client.send(plan.table_id, command, timeout=2.0)
        except Exception as e:  # noqa: BLE001 (no responders yet, timeout)
            last = f"{type(e).__name__}: {e}"
            await asyncio.sleep(0.25)
            continue
        if reply.ok or (reply.error and reply.error.code == "already_open"):
            return
        last = f"{reply.error.code}: {reply.error.message}" if reply.error else "refused"
        if reply.error and reply.error.code not in (*protocol.RETRYABLE, protocol.UNKNOWN_TABLE):
            break
        await asyncio.sleep(0.25)
    raise RuntimeError(f"could not open table {plan.table_id}: {last}")


# ---------------------------------------------------------------------- the room


@dataclass
class RoomResult:
    seconds: float
    tables: int
    bots: int
    hands: int
    actions: int
    commands: int
    errors: int
    stale: int
    latencies: list[float]
    error_codes: dict[str, int]
    bots_list: list[Bot] = field(default_factory=list)


class Room:
    """The bots of a room, in this process, on a running NATS with services."""

    def __init__(self, nats_url: str, plans: Sequence[TablePlan], *, pace_ms: int = 0,
                 seed: int | None = None, record: bool = False, keep_latencies: bool = True,
                 stall_seconds: float = 3.0) -> None:
        self.nats_url = nats_url
        self.plans = list(plans)
        self.pace_ms = pace_ms
        self.rng = random.Random(seed)
        self.record = record
        self.stall_seconds = stall_seconds
        self.stats = BotStats(keep_latencies=keep_latencies)
        self.bots: list[Bot] = []
        self._connections: list[Any] = []
        self._subs: list[Any] = []

    async def start(self, open_timeout: float = 60.0) -> None:
        import nats

        from .players.client import TableClient

        deadline = time.monotonic() + open_timeout
        for plan in self.plans:
            nc = await nats.connect(self.nats_url, name=f"studroom-room-{plan.table_id}",
                                    max_reconnect_attempts=-1)
            self._connections.append(nc)
            client = TableClient(nc)
            await open_table(client, plan, deadline)
            js = nc.jetstream()
            bots: list[Bot] = []
            self._subs.append(await nc.subscribe(subjects.public_events(plan.table_id),
                                                 cb=self._fan_out(bots)))
            for i, (seat, player) in enumerate(plan.seats.items()):
                bot = Bot(nc, client, plan.table_id, seat, player,
                          random.Random(self.rng.getrandbits(64)), self.pace_ms,
                          stats=self.stats, record=self.record, count_hands=i == 0,
                          stall_seconds=self.stall_seconds, js=js)
                bots.append(bot)
                self.bots.append(bot)
        await asyncio.gather(*(self._start_bot(bot) for bot in self.bots))

    def _fan_out(self, bots: list[Bot]) -> Any:
        """One subscription to a table's public subject for all its bots (decoded
        once: the room's CPU goes to playing, not to copies of the same message)."""

        async def deliver(msg: Any) -> None:
            try:
                event = decode_event(msg.data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                self.stats.error("bad_message")
                return
            for bot in bots:
                bot.take_public(msg, event)

        return deliver

    async def _start_bot(self, bot: Bot) -> None:
        plan = next(p for p in self.plans if p.table_id == bot.table_id)
        kept = bot.seat in plan.kept
        await bot.start(stakes=plan.config.stakes, stack=plan.kept.get(bot.seat), seated=kept,
                        subscribe_public=False)

    async def stop(self) -> None:
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._subs.clear()
        await asyncio.gather(*(bot.stop() for bot in self.bots), return_exceptions=True)
        for nc in self._connections:
            with contextlib.suppress(Exception):
                await nc.drain()
        self._connections.clear()


class Progress:
    """One terminal line, rewritten in place (a full line every few seconds when the
    output is not a terminal)."""

    def __init__(self, out: IO[str], enabled: bool = True) -> None:
        self.out = out
        self.enabled = enabled
        self.tty = out.isatty()
        self.last_line_at = 0.0
        self.width = 0

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            pad = max(self.width - len(text), 0)
            self.out.write("\r" + text + " " * pad)
            self.width = len(text)
            self.out.flush()
        elif time.monotonic() - self.last_line_at >= 5:
            self.last_line_at = time.monotonic()
            self.out.write(text + "\n")
            self.out.flush()

    def done(self) -> None:
        if self.enabled and self.tty and self.width:
            self.out.write("\n")
            self.out.flush()
            self.width = 0


async def play(nats_url: str, plans: Sequence[TablePlan], *, seconds: float | None,
               pace_ms: int, stop: asyncio.Event, progress: Progress,
               services: Services | None = None) -> RoomResult:
    room = Room(nats_url, plans, pace_ms=pace_ms)
    stats = room.stats
    started = time.monotonic()
    try:
        start_task = asyncio.create_task(room.start())
        stop_task = asyncio.create_task(stop.wait())
        await asyncio.wait({start_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        if not start_task.done():
            start_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await start_task
        else:
            start_task.result()
        stop_task.cancel()
        started = time.monotonic()
        base_actions = stats.actions
        window: list[tuple[float, int]] = [(started, base_actions)]
        end = None if seconds is None else started + seconds
        while not stop.is_set():
            timeout = 0.5 if end is None else max(min(0.5, end - time.monotonic()), 0)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout)
            now = time.monotonic()
            window.append((now, stats.actions))
            while len(window) > 2 and now - window[0][0] > 5:
                window.pop(0)
            rate = (window[-1][1] - window[0][1]) / max(window[-1][0] - window[0][0], 1e-9)
            dead = services.dead() if services is not None else []
            line = (f"hands {stats.hands:>7} | actions {stats.actions - base_actions:>8} "
                    f"({rate:7.1f}/s) | tables {len(plans)} | bots {len(room.bots)} | "
                    f"errors {stats.errors} | {now - started:5.0f} s")
            if dead:
                line += " | DOWN: " + ", ".join(dead)
            progress.show(line)
            if end is not None and now >= end:
                break
    finally:
        elapsed = time.monotonic() - started
        progress.done()
        await room.stop()
    return RoomResult(
        seconds=elapsed, tables=len(plans), bots=len(room.bots), hands=stats.hands,
        actions=stats.actions, commands=stats.commands, errors=stats.errors,
        stale=stats.refused_stale, latencies=list(stats.latencies), error_codes=stats.error_codes,
        bots_list=room.bots,
    )


@dataclass
class RoomOptions:
    tables: int = 4
    bots_per_table: int = 5
    seconds: float | None = None
    instances: int = 1
    stores: int = 1
    pace_ms: int = 0
    progress: bool = True
    timers: bool = True           # the timer service: turns of absent players time out


def run(settings: Settings, options: RoomOptions, out: IO[str] = sys.stdout) -> int:
    """The room, start to end; returns the exit code (0: ran and chips conserved)."""
    from .runtime.embedded import servers

    say = lambda text: (out.write(text + "\n"), out.flush())
    schemas = store_schemas(options.stores)
    ids = table_ids(options.tables)
    with servers(settings) as (nats_url, database_url):
        say(f"studroom room: NATS {nats_url}, PostgreSQL {_safe_url(database_url)}, "
            f"data {settings.data_dir}")
        problem = store_layout_problem(database_url, options.stores)
        if problem:
            say(f"studroom room: {problem}")
            return 2
        existing = load_tables(database_url, schemas, only=ids)
        before = events_stored(database_url, schemas)
        plans = plan_tables(ids, options.bots_per_table, existing)
        reused = sum(1 for p in plans if p.table_id in existing)
        say(f"{len(plans)} tables ({reused} reused), {sum(len(p.seats) for p in plans)} bots, "
            f"{options.instances} table service(s), {options.stores} store(s), "
            f"relay{', timer service' if options.timers else ''}, "
            f"pace {options.pace_ms} ms" + ("" if options.seconds is None else
                                             f", for {options.seconds:g} s")
            + "; Ctrl-C stops")
        services = Services(child_env(nats_url, database_url, settings.data_dir),
                            settings.data_dir / "logs", instances=options.instances,
                            stores=options.stores, timers=options.timers)
        services.start()
        problems: list[str] = []
        result: RoomResult | None = None
        try:
            result = asyncio.run(_play_until_signal(nats_url, plans, options, services, out))
        except RuntimeError as e:
            problems.append(str(e))
        finally:
            with _shutting_down(say):
                problems += services.stop()
        with _shutting_down(say):
            say(f"checking the chips: replaying every table of {len(schemas)} store(s) ...")
            tables = load_tables(database_url, schemas)
            after = events_stored(database_url, schemas)
            chips = check_tables(tables)
    _summary(say, result, before, after, chips, problems, options)
    return 0 if chips.conserved and result is not None and not problems else 1


@contextlib.contextmanager
def _shutting_down(say: Any) -> Any:
    """While stopping: another Ctrl-C must not leave services or servers behind."""
    def note(_sig: int, _frame: Any) -> None:
        say("stopping: services and servers are being shut down, one moment ...")

    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


async def _play_until_signal(nats_url: str, plans: Sequence[TablePlan], options: RoomOptions,
                             services: Services, out: IO[str]) -> RoomResult:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        return await play(nats_url, plans, seconds=options.seconds, pace_ms=options.pace_ms,
                          stop=stop, progress=Progress(out, options.progress), services=services)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def _summary(say: Any, result: RoomResult | None, before: int, after: int, chips: ChipCheck,
             problems: Iterable[str], options: RoomOptions) -> None:
    say("")
    say("summary")
    if result is not None:
        secs = max(result.seconds, 1e-9)
        say(f"  ran          {result.seconds:.1f} s, {result.tables} tables, {result.bots} bots, "
            f"{options.instances} table service(s), {options.stores} store(s)")
        say(f"  hands        {result.hands} ({result.hands / secs:.1f}/s)")
        say(f"  actions      {result.actions} ({result.actions / secs:.1f}/s); "
            f"commands {result.commands}")
        say(f"  latency      p50 {percentile(result.latencies, 50) * 1000:.1f} ms, "
            f"p99 {percentile(result.latencies, 99) * 1000:.1f} ms (request -> reply)")
        codes = ", ".join(f"{k} {v}" for k, v in sorted(result.error_codes.items()))
        say(f"  errors       {result.errors}" + (f" ({codes})" if codes else "")
            + f"; stale answers {result.stale}")
        say(f"  events       {after - before} stored this run ({(after - before) / secs:.1f}/s), "
            f"{after} in all")
    else:
        say(f"  events       {after - before} stored this run, {after} in all")
    say(f"  hands stored {chips.hands} on {chips.tables} tables")
    verdict = "yes" if chips.conserved else "NO"
    say(f"  chips conserved: {verdict} (bought {chips.bought} = behind {chips.behind} "
        f"+ in hands {chips.in_hand} + rake {chips.rake} + cashed out "
        f"{chips.cashed_out}; {chips.tables} tables replayed)")
    for bad in chips.bad[:10]:
        say(f"    {bad}")
    for problem in problems:
        say(f"  problem: {problem}")


def _safe_url(url: str) -> str:
    """The URL without a password."""
    import re

    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def cli(args: Any) -> int:
    """``studroom room ...`` (see the module's docstring)."""
    import dataclasses
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    settings = Settings.from_env()
    if args.data_dir:
        settings = dataclasses.replace(settings, data_dir=Path(args.data_dir).expanduser().absolute())
    options = RoomOptions(
        tables=args.tables, bots_per_table=args.bots_per_table, seconds=args.seconds,
        instances=args.instances, stores=args.stores, pace_ms=args.pace,
        progress=not args.quiet, timers=not getattr(args, "no_timers", False),
    )
    try:
        return run(settings, options)
    except KeyboardInterrupt:       # before the room's own handlers were in place
        print("\nstopped", file=sys.stderr)
        return 130
