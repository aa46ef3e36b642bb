"""The room, start to end (``studroom room``; docs/design/room.md).

1. Servers: the ones the settings name, embedded ones in the data folder for the others
   (the embedded NATS in operator mode: no connection without credentials).
2. Tables: planned from what the store holds (:mod:`.plans`).
3. Identities: the room's Authority (``<data dir>/auth``) issues credentials for each
   service, the operator "floor", the spectator and each bot (kept for the next start).
4. Services: table services, the relay, the timer service and the cashier as child
   processes, each with its own credentials (:mod:`..runtime.processes.supervisor`).
5. Play: the floor deposits each bot's bankroll at the cashier; the bots in this
   process (:mod:`.bots`) buy in through it and play; a progress line
   (:mod:`.progress`) until Ctrl-C, SIGTERM or the end of ``--for``.
6. Summary: hands, actions, latency, errors, events stored, and the chip check over
   every table of the stores.  The data stays for the next start.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from studroom.projections.ledger.conservation import ChipCheck
from studroom.projections.ledger.room_check import chip_check

from ..auth.authority import Authority, room_authority
from ..runtime.arguments import one_line
from ..runtime.observability.stats import percentile
from ..runtime.processes import process
from ..runtime.processes.credentials import masked_url
from ..runtime.processes.preflight import preflight_url
from ..runtime.processes.supervisor import Services, child_env
from ..runtime.servers.external_or_embedded import servers, store_servers
from ..runtime.settings import Settings
from ..runtime.text import ms, number
from ..runtime.text import rate as per_second
from ..store.inspect import events_stored, load_tables
from ..store.layout import LayoutMismatch, check_recorded_layout, store_schemas
from ..store.servers import StoreElsewhere
from ..warden.connections import watching
from ..wire.declared import Refused
from .bots import FLOOR, SPECTATOR, Room
from .plans import TablePlan, kept_beyond, plan_tables, table_ids
from .progress import ActionRate, Progress, status_line

Say = Callable[[str], Any]
SUPERVISE_EVERY = 0.25      # seconds between two looks for dead services
# Opening the tables may take --for, but at least this long: the services' start on a
# loaded machine (a NATS that cannot serve the room is refused at once by the preflight).
OPENING_AT_LEAST = 30.0


@dataclass
class RoomOptions:
    """What ``studroom room`` was asked for (its options and defaults: services/cli/main.py)."""

    tables: int
    bots_per_table: int
    seconds: float | None         # None: until Ctrl-C or SIGTERM
    instances: int
    stores: int
    pace_ms: int
    progress: bool
    timers: bool                  # the timer service: turns of absent players time out
    db_servers: int = 1           # embedded PostgreSQL servers the stores are spread over
    console_port: int | None = None   # the web console's port on 127.0.0.1 (None: no console)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RoomOptions:
        return cls(tables=args.tables, bots_per_table=args.bots_per_table, seconds=args.seconds,
                   instances=args.instances, stores=args.stores, pace_ms=args.pace,
                   progress=not args.quiet, timers=not args.no_timers,
                   db_servers=getattr(args, "db_servers", 1),
                   console_port=None if getattr(args, "no_console", True) else console_port(args.console_port))


def console_port(wanted: int | None) -> int:
    """The console's port: ``wanted`` if given (0: a free one), else the console's
    default (8480) if it is free, else a free one; chosen here, so the room can say it."""
    from ..console.bootstrap import DEFAULT_PORT
    from ..runtime.servers.server_process import free_port, port_is_free

    if wanted == 0:
        return free_port()
    if wanted is not None:
        if not port_is_free(wanted):
            raise SystemExit(f"studroom room: port {wanted} of 127.0.0.1 is taken (--console-port)")
        return wanted
    return DEFAULT_PORT if port_is_free(DEFAULT_PORT) else free_port()


@dataclass
class RoomResult:
    seconds: float                # of play (0: the tables were never all open)
    tables: int
    bots: int
    hands: int
    actions: int
    commands: int
    errors: int
    stale: int
    latencies: list[float]
    error_codes: dict[str, int]
    not_played: str | None        # why the bots never played, if they did not
    restarts: dict[str, int]      # services started again after they died, by name


def cli(args: argparse.Namespace) -> int:
    """``studroom room ...``: the exit code (0: ran and chips conserved)."""
    process.configure_logging("WARNING")
    settings = Settings.from_env()
    if args.data_dir:
        settings = dataclasses.replace(settings, data_dir=Path(args.data_dir).expanduser().absolute())
    try:
        return run(settings, RoomOptions.from_args(args))
    except KeyboardInterrupt:       # before the room's own handlers were in place
        print("\nstopped", file=sys.stderr)
        return 130


def run(settings: Settings, options: RoomOptions, out: IO[str] = sys.stdout) -> int:
    """The room, start to end; returns the exit code (0: ran and chips conserved)."""

    def say(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    schemas = store_schemas(options.stores)
    ids = table_ids(options.tables)
    authority = room_authority(settings.data_dir)
    with servers(settings) as (nats_url, database_url), \
            store_servers(settings, options.stores, options.db_servers) as elsewhere:
        say(f"studroom room: NATS {masked_url(nats_url)}, PostgreSQL {masked_url(database_url)}, "
            f"data {settings.data_dir}" + "".join(f"; store {j} on {masked_url(url)}" for j, url in elsewhere.items()))
        try:
            check_recorded_layout(database_url, options.stores, urls=elsewhere)
        except (LayoutMismatch, StoreElsewhere) as refused:
            hint = " (or start the room with the --db-servers it was first started with)" \
                if isinstance(refused, StoreElsewhere) else ""
            say(f"studroom room: {refused}{hint}")
            return 2
        existing = load_tables(database_url, schemas, only=ids)
        before = events_stored(database_url, schemas)
        plans = plan_tables(ids, options.bots_per_table, existing)
        reused = sum(1 for p in plans if p.table_id in existing)
        say(f"{len(plans)} tables ({reused} reused), {sum(len(p.seats) for p in plans)} bots, "
            f"{options.instances} table service(s), {options.stores} store(s), "
            f"relay{', timer service' if options.timers else ''}, cashier, "
            f"pace {options.pace_ms} ms" + ("" if options.seconds is None else
                                             f", for {options.seconds:g} s")
            + "; Ctrl-C stops")
        if (note := kept_beyond(plans, options.bots_per_table)) is not None:
            say(note)
        services = Services(child_env(nats_url, database_url, settings.data_dir, elsewhere),
                            settings.data_dir / "logs", instances=options.instances,
                            stores=options.stores, timers=options.timers, authority=authority,
                            console_port=options.console_port)
        issued = issue_credentials(authority, plans, services)
        say(f"credentials: {issued} identities in {authority.creds_dir} (services, operator "
            f"{FLOOR!r}, spectator {SPECTATOR!r}, a player for each bot)")
        try:
            asyncio.run(preflight_url(nats_url, authority.creds_path("service", "table"), "room",
                                      sender=("service", "table")))
        except Refused as refused:
            say(f"studroom room: {refused}")
            return 2
        services.start()
        if options.console_port is not None:
            say(f"console: http://127.0.0.1:{options.console_port}/ (watch as a spectator; to play, "
                "studroom player add NAME --password)")
        problems: list[str] = []
        result: RoomResult | None = None
        try:
            result = asyncio.run(_play_until_signal(nats_url, authority if settings.embedded_nats else None,
                                                    authority, plans, options, services, out))
        finally:
            with _shutting_down(say):
                problems += services.stop()
        with _shutting_down(say):
            say(f"checking the chips: reconciling the books with every table of {len(schemas)} store(s) ...")
            after = events_stored(database_url, schemas)
            chips = chip_check(database_url, schemas)
    _summary(say, result, before, after, chips, problems, options)
    return exit_code(result, chips, problems)


def exit_code(result: RoomResult | None, chips: ChipCheck, problems: Sequence[str]) -> int:
    """0 when the bots played, the chips of the tables are conserved and no service failed."""
    played = result is not None and result.not_played is None
    return 0 if played and chips.tables and chips.conserved and not problems else 1


def issue_credentials(authority: Authority, plans: Sequence[TablePlan], services: Services) -> int:
    """Every identity the room uses, issued unless it exists: how many there are."""
    identities = services.identities() | {("operator", FLOOR), ("spectator", SPECTATOR)}
    identities |= {("player", player) for plan in plans for player in plan.seats.values()}
    for role, name in identities:
        authority.ensure(role, name)
    return len(identities)


async def _play_until_signal(nats_url: str, warden: Authority | None, authority: Authority,
                             plans: Sequence[TablePlan], options: RoomOptions, services: Services,
                             out: IO[str]) -> RoomResult:
    """``warden``: the Authority whose warden caps each identity's connections (the
    embedded NATS's; none on external servers, whose administrators run their own)."""
    async with contextlib.AsyncExitStack() as stack:
        if warden is not None:
            await stack.enter_async_context(watching(nats_url, warden))
        with process.stop_on_signals() as stop:
            return await play(nats_url, authority, plans, seconds=options.seconds, pace_ms=options.pace_ms,
                              stop=stop, progress=Progress(out, options.progress), services=services)


async def play(nats_url: str, authority: Authority, plans: Sequence[TablePlan], *,
               seconds: float | None, pace_ms: int, stop: asyncio.Event, progress: Progress,
               services: Services, opening_at_least: float = OPENING_AT_LEAST) -> RoomResult:
    """Seat the bots and let them play until ``stop`` or for ``seconds``, showing
    progress; opening the tables may take ``seconds`` (at least ``opening_at_least``) too.  The services that
    die are started again meanwhile."""
    room = Room(nats_url, plans, authority=authority, pace_ms=pace_ms)
    stats = room.stats
    supervising = asyncio.create_task(_supervise(services))
    started = time.monotonic()
    not_played: str | None = "stopped"
    try:
        opening = None if seconds is None else max(seconds, opening_at_least)
        not_played = await _start(room, stop, None if opening is None else started + opening, opening)
        started = time.monotonic()
        end = None if seconds is None else started + seconds
        base_actions = stats.actions
        rate = ActionRate(started, base_actions)
        while not_played is None and not stop.is_set():
            timeout = 0.5 if end is None else max(min(0.5, end - time.monotonic()), 0)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout)
            now = time.monotonic()
            progress.show(status_line(
                hands=stats.hands, actions=stats.actions - base_actions,
                rate=rate.add(now, stats.actions), tables=len(plans), bots=len(room.bots),
                errors=stats.errors, seconds=now - started, down=services.dead(),
                restarts=sum(services.restarts().values())))
            if end is not None and now >= end:
                break
    finally:
        elapsed = 0.0 if not_played else time.monotonic() - started
        supervising.cancel()
        progress.done()
        await room.stop()
    return RoomResult(
        seconds=elapsed, tables=len(plans), bots=len(room.bots), hands=stats.hands,
        actions=stats.actions, commands=stats.commands, errors=stats.errors,
        stale=stats.refused_stale, latencies=list(stats.latencies), error_codes=stats.error_codes,
        not_played=not_played, restarts=services.restarts(),
    )


async def _supervise(services: Services, every: float = SUPERVISE_EVERY) -> None:
    """Start again the services that die (:meth:`Services.supervise`), until cancelled."""
    while True:
        services.supervise()
        await asyncio.sleep(every)


async def _start(room: Room, stop: asyncio.Event, end: float | None, seconds: float | None) -> str | None:
    """Open the tables and seat the bots, unless ``stop`` or ``end`` comes first:
    None, or why the bots cannot play."""
    start_task = asyncio.create_task(room.start())
    stop_task = asyncio.create_task(stop.wait())
    timeout = None if end is None else max(end - time.monotonic(), 0)
    await asyncio.wait({start_task, stop_task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    stop_task.cancel()
    if start_task.done():
        error = start_task.exception()
        if error is None:
            return None
        return str(error) if isinstance(error, RuntimeError) else one_line(error)
    start_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await start_task
    opened = f"{room.opened} of {len(room.plans)} tables open"
    if stop.is_set():
        return f"stopped before the tables were open ({opened})"
    return f"the tables were not open within {seconds:g} s ({opened})"


@contextlib.contextmanager
def _shutting_down(say: Say) -> Iterator[None]:
    """While stopping: another Ctrl-C must not leave services or servers behind."""
    def note(_sig: int, _frame: Any) -> None:
        say("stopping: services and servers are being shut down, one moment ...")

    previous = {sig: signal.signal(sig, note) for sig in process.STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _summary(say: Say, result: RoomResult | None, before: int, after: int, chips: ChipCheck,
             problems: Iterable[str], options: RoomOptions) -> None:
    say("")
    say("summary")
    if result is not None and result.not_played is None:
        secs = max(result.seconds, 1e-9)
        say(f"  ran          {result.seconds:.1f} s, {result.tables} tables, {result.bots} bots, "
            f"{options.instances} table service(s), {options.stores} store(s)")
        say(f"  hands        {number(result.hands)} ({per_second(result.hands / secs)})")
        say(f"  actions      {number(result.actions)} ({per_second(result.actions / secs)}); "
            f"commands {number(result.commands)}")
        if result.latencies:
            say(f"  latency      p50 {ms(percentile(result.latencies, 50) * 1000)} ms, "
                f"p99 {ms(percentile(result.latencies, 99) * 1000)} ms (request -> reply)")
        else:
            say("  latency      none measured (no request answered)")
        codes = ", ".join(f"{k} {number(v)}" for k, v in sorted(result.error_codes.items()))
        say(f"  errors       {number(result.errors)}" + (f" ({codes})" if codes else "")
            + f"; stale answers {number(result.stale)}")
        say(f"  events       {number(after - before)} stored this run ({per_second((after - before) / secs)}), "
            f"{number(after)} in all")
    else:
        why = "" if result is None else f": {result.not_played}"
        say(f"  no tables played{why}")
        say(f"  events       {number(after - before)} stored this run, {number(after)} in all")
    if result is not None:
        restarts = ", ".join(f"{name} {n}" for name, n in sorted(result.restarts.items()))
        say(f"  restarts     {restarts or 'none'}")
    say(f"  hands stored {number(chips.hands)} on {chips.tables} tables")
    if chips.tables:
        verdict = "yes" if chips.conserved else "NO"
        say(f"  chips conserved: {verdict} (bought {number(chips.bought)} = behind {number(chips.behind)} "
            f"+ in hands {number(chips.in_hand)} + rake {number(chips.rake)} + cashed out "
            f"{number(chips.cashed_out)}; {chips.tables} tables replayed)")
    else:
        say("  chips        no table in the store(s): nothing to check")
    for bad in chips.bad[:10]:
        say(f"    {bad}")
    for problem in problems:
        say(f"  problem: {problem}")
