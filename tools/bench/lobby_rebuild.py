"""The lobby's rebuild from zero, for ``bench lobby`` (:mod:`.lobby`): a simulated
room's public events in a public stream of their own, in messages as the relay
publishes them (:func:`commits`); a lobby from zero applies them all (events/s, CPU
per event), beside a bare read of the same stream (each message pulled and
acknowledged, nothing done) in the same run."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from studroom.domain import views
from studroom.domain.events import Event, HandCancelled, HandEnded, PauseStarted, TurnStarted
from studroom.domain.simulate import simulated_room
from studroom.projections.lobby.jetstream import consumer_name
from studroom.services.relay.streams import ensure_streams
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import MAX_EVENTS, public_message
from studroom.services.wire.pull import PullLoop, shared_consumer
from studroom.services.wire.subjects import LOBBY_BUCKET

WAITS: Final = (TurnStarted, PauseStarted, HandEnded, HandCancelled)   # a command's events end here: the
                                                                       # table waits for someone


def commits(events: list[Event]) -> Iterator[list[Event]]:
    """A round's events cut as the relay publishes them, one message per commit, here
    about one per command (the simulated room does not say where its commands end): a
    run ends where the table waits for someone (a turn, a pause, a hand's end), or at
    ``MAX_EVENTS``.  Between hands, where no turn comes, several commands' events (a
    sit-down, a buy-in) go together."""
    run: list[Event] = []
    for event in events:
        run.append(event)
        if isinstance(event, WAITS) or len(run) == MAX_EVENTS:
            yield run
            run = []
    if run:
        yield run


async def _publish_room(nc: Any, events: int, tables: int) -> tuple[int, int]:
    """A simulated room's public events into the public stream, as the relay publishes
    them: how many events, in how many messages."""
    versions: dict[str, int] = defaultdict(int)
    published = messages = 0
    for played in simulated_room(tables):
        for run in commits([views.public(event) for event in played.events]):
            subject, headers, payload = public_message(played.table_id, versions[played.table_id] + 1, run)
            await nc.publish(subject, payload, headers=headers)
            versions[played.table_id] += len(run)
            messages += 1
        published += len(played.events)
        await nc.flush()                                      # a hand at a time: no slow consumer
        if published >= events:
            return published, messages
    raise AssertionError("simulated_room never ends")  # pragma: no cover


async def _until_stored(js: Any, count: int) -> None:
    while (await js.stream_info(subjects.PUBLIC_STREAM)).state.messages < count:
        await asyncio.sleep(0.1)


async def _bare_read(nc: Any, count: int) -> float:
    """Seconds to pull and acknowledge ``count`` messages of the public stream."""
    js = nc.jetstream()
    await js.add_consumer(subjects.PUBLIC_STREAM, shared_consumer("bench_bare", subjects.all_public_events(), 30.0,
                                                                  "bench lobby: the bare read"))
    done, stop = 0, asyncio.Event()

    async def handle(msg: Any) -> None:
        nonlocal done
        await msg.ack()
        done += 1
        if done >= count:
            stop.set()

    loop = PullLoop(nc, subjects.PUBLIC_STREAM, "bench_bare", handle, max_inflight=4096)
    started = time.perf_counter()
    await loop.run(stop)
    return time.perf_counter() - started


async def _rebuild(nc: Any, count: int, every_ms: int) -> float:
    """Seconds for a lobby from zero to apply the ``count`` messages of the stream."""
    from studroom.projections.lobby.service import LobbyService

    js = nc.jetstream()
    instance = f"bench{every_ms}"
    service, stop = LobbyService(nc, instance_id=instance, every=every_ms / 1000), asyncio.Event()
    started = time.perf_counter()
    assert await service.setup(stop)
    running = asyncio.create_task(service.run(stop))
    try:
        while True:
            info = await js.consumer_info(subjects.PUBLIC_STREAM, consumer_name(instance))
            if info.ack_floor.stream_seq >= count:
                return time.perf_counter() - started
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await running


def rebuild(*, events: int, tables: int, every_ms: list[int]) -> dict[str, float]:
    """The rebuild from zero (a lobby for each of ``every_ms``, one after the other,
    each with a consumer and a bucket of its own), on an open NATS of its own; CPU is
    this process's (the lobby runs in it)."""
    from studroom.services.runtime.processes import process

    temporary = Path(tempfile.mkdtemp(prefix="studroom-bench-lobby-"))

    async def main(url: str) -> dict[str, float]:
        nc = await process.connect(url, "bench-lobby")
        try:
            await ensure_streams(nc.jetstream())
            started = time.perf_counter()
            count, messages = await _publish_room(nc, events, tables)
            await _until_stored(nc.jetstream(), messages)
            stored = time.perf_counter() - started
            cpu = time.process_time()
            bare = await _bare_read(nc, messages)
            out = {"public events in the stream": count, "public messages (the relay's cut)": messages,
                   "publishing them: events/s": count / stored,
                   "baseline: bare read of the stream: events/s": count / bare,
                   "baseline: bare read of the stream: CPU us/event": 1e6 * (time.process_time() - cpu) / count}
            for every in every_ms:
                if every != every_ms[0]:                      # each lobby from an empty bucket
                    await nc.jetstream().delete_key_value(LOBBY_BUCKET)
                cpu = time.process_time()
                applied = await _rebuild(nc, messages, every)
                out[f"lobby rebuild, writes every {every} ms: events/s"] = count / applied
                out[f"lobby rebuild, writes every {every} ms: CPU us/event"] = 1e6 * (time.process_time() - cpu) / count
            return out
        finally:
            await nc.drain()

    try:
        with EmbeddedNats(temporary, auth=False) as server:
            return asyncio.run(main(server.url))
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
