"""How far behind live play is the lobby, and how fast does it rebuild?  Each beside a
baseline measured in the same run (docs/design/benchmarks.md).

    studroom bench lobby [--seconds 10] [--tables 16] [--bots-per-table 4] [--events 100000]
                         [--write-every-ms 0,250]

A row for each ``--write-every-ms`` of the lobby (0: a write per batch, as before issue
20, the baseline of the same run):

* lag: the room as ``bench room`` runs it (its services as child processes, the lobby
  among them, instant bots, NATS in operator mode); for every public event, the time
  from its message reaching a spectator to the lobby storing an entry of its table at
  that version or later (p50, p99, max; the goal: p99 under a second), beside the
  round trip of a bare compare-and-set write to a KV bucket of the same server; the
  lobby process's CPU per action and per event and its KV writes per action (/proc),
  its CPU with the tables open and nobody playing, and the relay's events per message;
* rebuild: a simulated room's public events (at least 100,000, domain/simulate.py's
  simulated room) in a public stream of their own, in messages as the relay cuts them
  (:mod:`.lobby_rebuild`); a lobby from zero applies them all (events/s, CPU per
  event), beside a bare read of the same stream (each message pulled and
  acknowledged, nothing done).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import shutil
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from studroom.projections.lobby.entry import decode
from studroom.projections.lobby.ordering import EVERY
from studroom.services.room.plans import MAX_BOTS_PER_TABLE
from studroom.services.runtime.arguments import int_range, positive_float, positive_int
from studroom.services.runtime.observability.stats import percentile
from studroom.services.runtime.processes.supervisor import Services
from studroom.services.runtime.settings import Settings
from studroom.services.runtime.text import figures, table
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import first_version
from studroom.services.wire.subjects import LOBBY_BUCKET

from ..lobby_lag import lags_ms
from .lobby_rebuild import rebuild

HELP = ("lobby: its lag behind live play under bench room load (p99, goal < 1 s) and its rebuild rate, "
        "beside bare KV writes and a bare read of the stream")

GOAL_MS = 1000.0
EVERY_MS = int(1000 * EVERY)

# ----------------------------------------------------------------------------- lag


@dataclasses.dataclass
class Arrivals:
    """When each public event (its message) and each stored entry arrived (monotonic
    seconds), and how many public messages, actions (``Acted``, ``TimedOut``) and entry
    writes came while recording."""

    public: dict[str, dict[int, float]] = dataclasses.field(default_factory=lambda: defaultdict(dict))
    stored: dict[str, list[tuple[float, int]]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    recording: bool = False
    messages: int = 0
    actions: int = 0
    writes: int = 0

    async def on_public(self, msg: Any) -> None:
        """A public message (a run of a table's events): each of its events' versions
        arrived now, counted from its headers, its body not decoded."""
        if not self.recording:
            return
        types = (msg.headers or {}).get(subjects.EVENTS_HEADER, "").split(",")
        arrived, now = self.public[subjects.table_of_public(msg.subject)], time.monotonic()
        first = first_version(msg.headers, len(types))
        for version in range(first, first + len(types)):
            arrived.setdefault(version, now)
        self.messages += 1
        self.actions += sum(kind in ACTIONS for kind in types)

    def on_stored(self, key: str, value: bytes) -> None:
        self.stored[key].append((time.monotonic(), decode(value).version))
        self.writes += self.recording


ACTIONS = frozenset({"Acted", "TimedOut"})     # a player's action (or the timer's for him): issue 20's unit
IDLE_S = 5.0                                   # seconds the lobby is watched with nobody playing


async def _watch_bucket(nc: Any, arrivals: Arrivals, stop: asyncio.Event) -> None:
    """Every value the lobby stores (a KV watch), until ``stop``."""
    js = nc.jetstream()
    while True:
        with contextlib.suppress(Exception):
            kv = await js.key_value(LOBBY_BUCKET)
            break
        await asyncio.sleep(0.1)
    watcher = await kv.watchall()
    stopper = asyncio.create_task(_stop_when(stop, watcher))
    try:
        async for update in watcher:
            if update is not None and update.value:
                arrivals.on_stored(update.key, update.value)
    finally:
        stopper.cancel()


async def _stop_when(stop: asyncio.Event, watcher: Any) -> None:
    await stop.wait()
    await watcher.stop()


async def bare_kv_writes_ms(nc: Any, count: int = 500) -> list[float]:
    """Round trips of compare-and-set writes to a scratch bucket, one at a time, ms."""
    from nats.js.api import KeyValueConfig

    js = nc.jetstream()
    bucket = f"bench_lobby_{uuid.uuid4().hex[:8]}"
    kv = await js.create_key_value(KeyValueConfig(bucket=bucket, history=1))
    try:
        value = b"x" * 1500                                   # about an entry's size
        revision = await kv.create("t", value)
        times = []
        for _ in range(count):
            started = time.perf_counter()
            revision = await kv.update("t", value, last=revision)
            times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        await js.delete_key_value(bucket)


def _cpu_s(pid: int) -> float:
    """CPU seconds of process ``pid`` so far (/proc)."""
    from studroom.tools.room_cpu import read_processes, tree_seconds

    return tree_seconds(pid, read_processes())


async def _measure_lag(nats_url: str, authority: Any, plans: list[Any], seconds: float,
                       lobby_pid: int) -> dict[str, float]:
    """The lobby's lag behind ``seconds`` of play, its CPU and writes, and its CPU idle."""
    from studroom.services.room.bots import Room
    from studroom.services.runtime.processes import process

    spectator = await process.connect(nats_url, "bench-lobby-spectator", creds=authority.ensure("spectator", "public"))
    watcher = await process.connect(nats_url, "bench-lobby-watch", creds=authority.ensure("service", "lobby"))
    arrivals, stop = Arrivals(), asyncio.Event()
    sub = await spectator.subscribe(subjects.all_public_events(), cb=arrivals.on_public)
    watching = asyncio.create_task(_watch_bucket(watcher, arrivals, stop))
    room = Room(nats_url, plans, authority=authority, pace_ms=0, seed=1, keep_latencies=False)
    try:
        await room.start()
        await asyncio.sleep(1.0)                              # warm up
        cpu = _cpu_s(lobby_pid)
        arrivals.recording = True
        await asyncio.sleep(seconds)
        arrivals.recording = False
        await asyncio.sleep(2.0)                              # the lobby's last writes
        cpu = _cpu_s(lobby_pid) - cpu                         # (its last writes counted: they are the run's)
    finally:
        await room.stop()
    await asyncio.sleep(2.0)                                  # the bots' leaving written
    idle = _cpu_s(lobby_pid)
    await asyncio.sleep(IDLE_S)
    idle = _cpu_s(lobby_pid) - idle
    stop.set()
    await watching
    await sub.unsubscribe()
    await spectator.drain()
    await watcher.drain()
    events = sum(len(v) for v in arrivals.public.values())
    lags = lags_ms(arrivals.public, arrivals.stored)
    return {
        "public events": events,
        "public events / message": events / arrivals.messages if arrivals.messages else float("nan"),
        "actions": arrivals.actions,
        "lobby CPU ms / action": 1000 * cpu / arrivals.actions if arrivals.actions else float("nan"),
        "lobby CPU us / event": 1e6 * cpu / events if events else float("nan"),
        "KV writes / action": arrivals.writes / arrivals.actions if arrivals.actions else float("nan"),
        "lag p50 ms": percentile(lags, 50),
        "lag p99 ms": percentile(lags, 99),
        "lag max ms": max(lags, default=float("nan")),
        "not stored at the end": events - len(lags),
        "idle CPU % of a core": 100 * idle / IDLE_S,
    }


def lag(settings: Settings, *, seconds: float, tables: int, bots_per_table: int, every_ms: int) -> dict[str, float]:
    """The room with its lobby (writing a table at most once in ``every_ms``) under
    bench room load, on servers of its own."""
    from studroom.services.auth.authority import room_authority
    from studroom.services.room.plans import plan_tables, table_ids
    from studroom.services.runtime.processes import process
    from studroom.services.runtime.processes.supervisor import child_env
    from studroom.services.runtime.servers.external_or_embedded import servers

    temporary = Path(tempfile.mkdtemp(prefix="studroom-bench-lobby-"))
    settings = dataclasses.replace(settings, nats_url=None, nats_creds=None, data_dir=temporary)
    try:
        with servers(settings) as (nats_url, database_url):
            authority = room_authority(temporary)

            async def baseline() -> list[float]:
                nc = await process.connect(nats_url, "bench-lobby-kv", creds=_bench_identity(authority, temporary))
                try:
                    return await bare_kv_writes_ms(nc)
                finally:
                    await nc.drain()

            bare = asyncio.run(baseline())
            plans = plan_tables(table_ids(tables, prefix=f"bl{uuid.uuid4().hex[:4]}t"), bots_per_table, {})
            services = _Services(child_env(nats_url, database_url, temporary), temporary / "logs", instances=1,
                                 stores=1, authority=authority, lobby_args=["--write-every-ms", str(every_ms)])
            services.start()
            try:
                pid = next(proc.pid for name, proc, _ in services.procs if name.endswith("-lobby"))
                results = asyncio.run(_measure_lag(nats_url, authority, plans, seconds, pid))
                dead = services.dead()
            finally:
                problems = services.stop()
            if dead or problems:
                raise RuntimeError(f"the room's services failed: {dead + problems}")
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return {"baseline: bare KV compare-and-set p50 ms": percentile(bare, 50),
            "baseline: bare KV compare-and-set p99 ms": percentile(bare, 99), **results}


@dataclasses.dataclass
class _Services(Services):
    """The room's services, the lobby's command line with ``lobby_args`` added."""

    lobby_args: list[str] = dataclasses.field(default_factory=list)

    def commands(self) -> list[tuple[str, list[str]]]:
        return [(name, [*command, *self.lobby_args] if name.endswith("-lobby") else command)
                for name, command in super().commands()]


def _bench_identity(authority: Any, folder: Path) -> Path:
    """Credentials of this benchmark's own, allowed a bucket of its own."""
    from studroom.services.auth import jwt

    token, seed = authority.user("bench.kv", publish=["$JS.>", "$KV.>"], subscribe=["_INBOX.bench.kv.>"])
    path = folder / "bench-kv.creds"
    path.write_text(jwt.creds(token, seed))
    return path


# ----------------------------------------------------------------------------- cli


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=positive_float, default=10.0, help="of play measured for the lag (default 10)")
    parser.add_argument("--tables", type=positive_int, default=16, help="tables played at once (default 16)")
    parser.add_argument("--bots-per-table", type=int_range(2, MAX_BOTS_PER_TABLE), default=4, help="bots at each table (default 4)")
    parser.add_argument("--events", type=positive_int, default=100_000, help="events the lobby rebuilds from (default 100000)")
    parser.add_argument("--write-every-ms", type=_every_list, default=[0, EVERY_MS],
                        help=f"rows: the lobby's --write-every-ms, comma-separated (default 0,{EVERY_MS}: "
                             "0 writes a table at every batch, as before issue 20: the baseline of the same run)")


def _every_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or any(not 0 <= v <= 1000 for v in values):
        raise argparse.ArgumentTypeError("comma-separated milliseconds, 0 to 1000")
    return values


def run(args: argparse.Namespace) -> int:
    print(f"bench lobby: rebuild from {args.events:,} simulated events; lag under {args.tables} tables x "
          f"{args.bots_per_table} instant bots for {args.seconds:g} s (the room's services, auth on), "
          f"a column for each --write-every-ms of {args.write_every_ms}", flush=True)
    print(figures(rebuild(events=args.events, tables=args.tables, every_ms=args.write_every_ms)), flush=True)
    rows = {every: lag(Settings.from_env(), seconds=args.seconds, tables=args.tables,
                       bots_per_table=args.bots_per_table, every_ms=every) for every in args.write_every_ms}
    print(side_by_side(rows))
    met = all(row["lag p99 ms"] < GOAL_MS for row in rows.values())
    print(f"goal: lag p99 < {GOAL_MS:.0f} ms -> {'met' if met else 'NOT met'}")
    return 0 if met else 1


_DECIMALS = {"public events / message": 2, "lobby CPU ms / action": 3, "KV writes / action": 3, "idle CPU % of a core": 2, "lobby CPU us / event": 0}


def side_by_side(rows: dict[int, dict[str, float]]) -> str:
    """The lag rows, a column for each ``--write-every-ms`` (0: as before issue 20)."""
    header = ["measured", *(f"every {every} ms" + (" (writes as before)" if every == 0 else "") for every in rows)]
    names = list(next(iter(rows.values())))
    decimals = {name: _DECIMALS.get(name, 1 if name.endswith("ms") else 0) for name in names}
    return table(header, [[name, *(f"{row[name]:,.{decimals[name]}f}" for row in rows.values())] for name in names],
                 right=header[1:])
