"""Benchmark of the timer service: timeouts per second and how late they come, with N
concurrent deadlines, beside bare JetStream and request/reply measured in the same run.
The table is a FAKE that answers ``ok`` at once (in a process of its own): the figures
are the timer path itself.
Each scenario runs twice: through the whole service (TurnStarted -> local wheel, the
schedule as backstop) and with the JetStream schedules alone (the baseline: what the
service did before its wheel).  The rows and columns: docs/design/benchmarks.md.

    studroom bench timer [--timers 1000] [--lead 4.0]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import multiprocessing
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
from nats.js.api import AckPolicy, ConsumerConfig, StorageType, StreamConfig
from studroom.domain.commands import Timeout
from studroom.domain.events import TurnStarted
from studroom.services.runtime.arguments import positive_float, positive_int
from studroom.services.runtime.observability.stats import percentile
from studroom.services.runtime.settings import Settings
from studroom.services.runtime.text import table
from studroom.services.timer.schedule import (
    TimerPayload,
    encode_payload,
    now_ms,
    schedule_headers,
)
from studroom.services.timer.service import TimerService
from studroom.services.wire import protocol, subjects
from studroom.services.wire.event_messages import public_message
from studroom.services.wire.pull import PullLoop


@dataclass
class Row:
    what: str
    count: int
    seconds: float
    fire: list[float]          # ms late (fire - deadline); empty for baselines
    done: list[float]          # ms: reply - deadline (timers) or latency (baselines)
    note: str = ""

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("inf")


def _row(row: Row) -> list[object]:
    """One row's figures: ms with one decimal, the rate an integer per second."""
    fire = [percentile(row.fire, 50), percentile(row.fire, 99)] if row.fire else ["-", "-"]
    per_second = round(row.rate) if row.seconds > 0 else None
    return [row.what, row.count, per_second, *fire, percentile(row.done, 50), percentile(row.done, 99),
            max(row.done) if row.done else float("nan"), row.note]


def render(rows: list[Row], header: str) -> str:
    lines = [header, ""]
    lines.append(table(["what", "n", "per s", "fire p50", "p99", "done/lat p50", "p99", "max", ""],
                       [_row(row) for row in rows], right=("fire p50", "p99")))
    lines.append("")
    lines.append("per s: completed / (last reply - first deadline); a paced row is limited by its "
                 "deadlines, not by the service.")
    lines.append("ms; fire = the wheel's fire, or the fired schedule's JetStream stamp (the server's "
                 "scheduler wakes at most every 250 ms), - deadline;")
    lines.append("done = fake table's reply received - deadline (the lateness of a turn's end); "
                 "baselines: lat = receive - send.")
    lines.append("One timer per table; the first final answer counts (the backstop's later firing "
                 "of a turn the wheel ended is skipped).")
    return "\n".join(lines)


# ------------------------------------------------------------------------- pieces


class FakeTable:
    """Answers every table command ``ok`` at once, in a process of its own (as the
    table service is): the timer's process does only the timer's work."""

    def __init__(self, nats_url: str) -> None:
        context = multiprocessing.get_context("spawn")
        self._ready = context.Event()
        self._stop = context.Event()
        self._process = context.Process(target=_answer_commands, args=(nats_url, self._ready, self._stop),
                                        name="studroom-bench-fake-table", daemon=True)

    def __enter__(self) -> FakeTable:
        self._process.start()
        if not self._ready.wait(30):
            raise RuntimeError("the fake table did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()


def _answer_commands(nats_url: str, ready: Any, stop: Any) -> None:
    """The fake table's process: ``ok`` to every command of every partition."""

    async def main() -> None:
        nc = await nats.connect(nats_url, name="studroom-bench-fake-table")
        reply = protocol.ok(1)

        async def answer(msg: Any) -> None:
            await msg.respond(reply)

        await nc.subscribe(subjects.all_commands(), cb=answer)
        await nc.flush()
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await nc.drain()

    asyncio.run(main())


class Completions:
    """Collects the service's finished timers of one scenario."""

    def __init__(self, prefix: str, expected: int) -> None:
        self.prefix = prefix
        self.expected = expected
        self.fire: list[float] = []
        self.done: list[float] = []
        self.last_done_ms = 0.0
        self.outcomes: dict[str, int] = {}
        self.sources: dict[str, int] = {}
        self.tables: set[str] = set()
        self.finished = asyncio.Event()

    def __call__(self, timer: TimerPayload, outcome: str, fired_ms: int | None, source: str) -> None:
        if not timer.table_id.startswith(self.prefix) or timer.table_id in self.tables:
            return
        self.tables.add(timer.table_id)
        self.sources[source] = self.sources.get(source, 0) + 1
        done = time.time() * 1000
        self.last_done_ms = max(self.last_done_ms, done)
        if fired_ms is not None:
            self.fire.append(fired_ms - timer.deadline_ms)
        self.done.append(done - timer.deadline_ms)
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if len(self.done) >= self.expected:
            self.finished.set()


async def _gather_limited(coros: list[Any], limit: int = 256) -> None:
    semaphore = asyncio.Semaphore(limit)

    async def one(coro: Any) -> None:
        async with semaphore:
            await coro

    await asyncio.gather(*(one(c) for c in coros))


# ---------------------------------------------------------------------- baselines


async def baseline_jetstream(nc: Any, n: int) -> Row:
    js = nc.jetstream()
    with contextlib.suppress(Exception):
        await js.delete_stream("BENCH_BASELINE")
    await js.add_stream(StreamConfig(name="BENCH_BASELINE", subjects=["bench.base.*"],
                                     storage=StorageType.FILE))
    await js.add_consumer("BENCH_BASELINE", ConsumerConfig(
        durable_name="base", ack_policy=AckPolicy.EXPLICIT, max_ack_pending=20_000))
    latencies: list[float] = []
    finished = asyncio.Event()

    async def handle(msg: Any) -> None:
        sent = float(msg.data)
        latencies.append(time.time() * 1000 - sent)
        await msg.ack()
        if len(latencies) >= n:
            finished.set()

    stop = asyncio.Event()
    loop = PullLoop(nc, "BENCH_BASELINE", "base", handle, max_inflight=512)
    runner = asyncio.create_task(loop.run(stop))
    start = time.perf_counter()
    await _gather_limited([
        js.publish(f"bench.base.{i % 100}", str(time.time() * 1000).encode()) for i in range(n)])
    await asyncio.wait_for(finished.wait(), 60)
    seconds = time.perf_counter() - start
    stop.set()
    await runner
    await js.delete_stream("BENCH_BASELINE")
    return Row("baseline: JetStream publish + consume + ack", n, seconds, [], latencies)


async def baseline_request_reply(nc: Any, n: int) -> Row:
    latencies: list[float] = []
    data = protocol.encode_command(Timeout(turn=1, seat=0, command_id="timeout-1"))

    async def one(i: int) -> None:
        started = time.perf_counter()
        await nc.request(subjects.command_from("service", "timer", f"base{i}"), data, timeout=10)
        latencies.append((time.perf_counter() - started) * 1000)

    start = time.perf_counter()
    await _gather_limited([one(i) for i in range(n)])
    return Row("baseline: request/reply to the fake table", n, time.perf_counter() - start, [],
               latencies)


# ---------------------------------------------------------------------- scenarios


async def timers_direct(nc: Any, service: TimerService, n: int, lead: float, spread_ms: int,
                        what: str, tag: str) -> Row:
    js = nc.jetstream()
    prefix = f"bt{tag}{int(time.time())}x"
    done = Completions(prefix, n)
    service.on_fire_done = done
    base = now_ms() + int(lead * 1000)
    deadlines = [base + (i * spread_ms // n if spread_ms else 0) for i in range(n)]
    coros = []
    for i, deadline in enumerate(deadlines):
        table_id = f"{prefix}{i}"
        payload = encode_payload(TimerPayload(table_id=table_id, turn=1, deadline_ms=deadline, seat=0))
        coros.append(js.publish(subjects.timer_schedule(table_id), payload,
                                headers=schedule_headers(table_id, deadline)))
    published = time.perf_counter()
    await _gather_limited(coros)
    publish_s = time.perf_counter() - published
    if now_ms() > base:
        raise RuntimeError(f"scheduling {n} timers took {publish_s:.1f}s: raise --lead")
    await asyncio.wait_for(done.finished.wait(), lead + spread_ms / 1000 + 60)
    seconds = (done.last_done_ms - base) / 1000
    return Row(what, n, seconds, done.fire, done.done, _sources(done))


async def timers_via_public(nc: Any, service: TimerService, n: int, lead: float, spread_ms: int,
                            what: str, tag: str) -> Row:
    js = nc.jetstream()
    prefix = f"btp{tag}{int(time.time())}x"
    done = Completions(prefix, n)
    service.on_fire_done = done
    base = now_ms() + int(lead * 1000)
    coros = []
    for i in range(n):
        deadline = base + (i * spread_ms // n if spread_ms else 0)
        event = TurnStarted(turn=1, seat=0, kind="act", deadline_ms=deadline, options=["fold", "call"])
        message = public_message(f"{prefix}{i}", 1, [event])
        coros.append(js.publish(message.subject, message.payload, headers=message.headers))
    scheduled = service.stats.scheduled
    await _gather_limited(coros)
    while service.stats.scheduled - scheduled < n:      # every turn read, scheduled and armed
        if now_ms() > base:
            raise RuntimeError(f"the service took more than {lead}s to read {n} turns: raise --lead")
        await asyncio.sleep(0.01)
    await asyncio.wait_for(done.finished.wait(), lead + spread_ms / 1000 + 60)
    seconds = (done.last_done_ms - base) / 1000
    return Row(what, n, seconds, done.fire, done.done, _sources(done))


def _sources(done: Completions) -> str:
    """Which path ended the turns: the wheel, or the schedule (the backstop)."""
    return ", ".join(f"{k} {v}" for k, v in sorted(done.sources.items()))


# --------------------------------------------------------------------------- run


async def measure(nats_url: str, timers: int, lead: float) -> list[Row]:
    nc = await nats.connect(nats_url, name="studroom-bench-timer")
    try:
        js = nc.jetstream()
        # A stand-in for the relay's public stream (the bench's own server only).
        with contextlib.suppress(Exception):
            await js.add_stream(StreamConfig(name=subjects.PUBLIC_STREAM,
                                             subjects=[subjects.all_public_events()],
                                             storage=StorageType.FILE))
        rows = [await baseline_jetstream(nc, timers), await baseline_request_reply(nc, timers)]
        service_nc = await nats.connect(nats_url, name="studroom-bench-timer-service")
        service = TimerService(service_nc, instance_id="bench", max_inflight=1024)
        await service.setup()
        stop = asyncio.Event()
        runner = asyncio.create_task(service.run(stop))
        try:
            rows.append(await timers_direct(nc, service, timers, lead, 0,
                                            "at one instant: schedules alone (baseline)", "a"))
            rows.append(await timers_via_public(nc, service, timers, lead, 0,
                                                "at one instant: the service (wheel + schedule)", "a"))
            rows.append(await timers_direct(nc, service, timers, lead, 1000,
                                            "paced over 1 s: schedules alone (baseline)", "s"))
            rows.append(await timers_via_public(nc, service, timers, lead, 1000,
                                                "paced over 1 s: the service (wheel + schedule)", "s"))
        finally:
            stop.set()
            await runner
            await service_nc.drain()
        print(f"the service's counters: {service.stats.line()}")
        return rows
    finally:
        await nc.drain()


def nats_server_version() -> str:
    try:
        from studroom.services.runtime.servers.embedded_nats import (
            nats_server_binary,
            nats_server_version,
        )

        return ".".join(map(str, nats_server_version(nats_server_binary())))
    except Exception:  # noqa: BLE001
        return "?"


def cpu_pressure() -> str:
    """The kernel's CPU pressure, ``some avg10`` (how loaded the machine is), or "?"."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return next(f"{f.split('=')[1]}%" for f in line.split() if f.startswith("avg10="))
    except (OSError, IndexError, StopIteration):
        return "?"


HELP = "timeouts/s and lateness with N concurrent deadlines, beside bare JetStream and request/reply"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timers", type=positive_int, default=1000, help="concurrent deadlines (default 1000)")
    parser.add_argument("--lead", type=positive_float, default=4.0,
                        help="seconds between scheduling and the first deadline (default 4)")


def run(args: argparse.Namespace) -> int:
    timers, lead = args.timers, args.lead
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("nats").setLevel(logging.CRITICAL)
    settings = Settings.from_env()
    folder: Path | None = None
    server = None
    try:
        if settings.nats_url is None:
            from studroom.services.runtime.servers.embedded_nats import EmbeddedNats

            folder = Path(tempfile.mkdtemp(prefix="studroom-bench-timer-"))
            server = EmbeddedNats(folder, auth=False).start()
            url, where = server.url, f"embedded nats-server {nats_server_version()} (file store, R1)"
        else:
            url, where = settings.nats_url, "NATS from STUDROOM_NATS_URL"
        pressure = cpu_pressure()
        with FakeTable(url):
            rows = asyncio.run(measure(url, timers, lead))
        pressure = f"{pressure} before, {cpu_pressure()} after"
    finally:
        if server is not None:
            server.stop()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    header = (f"studroom bench timer: {timers} concurrent deadlines, {where}, one timer-service "
              f"instance (one Python process).\nThe table is a FAKE responder (a process of its own) "
              f"that answers ok at once: these figures measure the timer path itself, not the table "
              f"service.\nCPU pressure (share of the last 10 s some task waited for a CPU; other "
              f"processes count): {pressure}.")
    print(render(rows, header))
    return 0
