"""The timer's schedules published the cheap way (``timer/publisher.py``), on a real
NATS server of this module's own (it is restarted): each publish resolved by its own
ack, a lost compare-and-set refused as ``js.publish`` refused it (and the turn's
schedule read again and published), no ack in time a timeout, and the ack
subscription kept across a reconnect."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
import pytest
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.timer.last_schedules import Last, LastSchedules, actual_last
from studroom.services.timer.publisher import SchedulePublisher
from studroom.services.timer.schedule import TimerPayload, decode_payload, encode_payload, schedule_headers
from studroom.services.timer.streams import ensure_timer_stream
from studroom.services.timer.turns import WRONG_LAST_SEQUENCE, Published, publish_schedule
from studroom.services.wire import subjects
from studroom.services.wire.pub_ack import PubAck

DEADLINE_MS = 4_102_444_800_000          # 2100-01-01: never fires during the test


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedNats]:
    folder = Path(tempfile.mkdtemp(prefix="studroom-it-timer-pub-"))
    try:
        with EmbeddedNats(folder, auth=False) as running:
            yield running
    finally:
        shutil.rmtree(folder, ignore_errors=True)


Scenario = Callable[[Any, Any, SchedulePublisher], Awaitable[None]]


def _run(server: EmbeddedNats, scenario: Scenario, ack_wait: float = 5.0) -> None:
    async def main() -> None:
        nc = await nats.connect(server.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1)
        js = nc.jetstream()
        await ensure_timer_stream(js)
        publisher = SchedulePublisher(nc, js, ack_wait=ack_wait)
        await publisher.start()
        try:
            await scenario(nc, js, publisher)
        finally:
            await publisher.stop()
            await nc.close()

    asyncio.run(main())


def _schedule(table_id: str, turn: int, expected_seq: int) -> tuple[str, bytes, dict[str, str]]:
    payload = encode_payload(TimerPayload(table_id=table_id, turn=turn, deadline_ms=DEADLINE_MS, seat=1))
    return subjects.timer_schedule(table_id), payload, schedule_headers(table_id, DEADLINE_MS, expected_seq)


async def _stored(js: Any, table_id: str) -> tuple[int, int]:
    """The table's pending schedule as the stream holds it: its sequence and turn."""
    msg = await js.get_last_msg(subjects.TIMER_STREAM, subjects.timer_schedule(table_id), direct=True)
    return msg.seq, decode_payload(msg.data).turn


def test_each_publish_gets_its_own_ack_and_the_schedule_is_stored(server: EmbeddedNats) -> None:
    async def scenario(nc: Any, js: Any, publisher: SchedulePublisher) -> None:
        tables = [f"pub-ack-{n}" for n in range(20)]
        acks = await asyncio.gather(*(publisher.publish(*_schedule(t, 1, 0)) for t in tables))
        assert all(isinstance(ack, PubAck) and ack.stream == subjects.TIMER_STREAM for ack in acks)
        assert len({ack.seq for ack in acks}) == len(tables)
        for table_id, ack in zip(tables, acks, strict=True):
            assert await _stored(js, table_id) == (ack.seq, 1)
        replaced = await publisher.publish(*_schedule(tables[0], 2, acks[0].seq))   # the next turn's
        assert await _stored(js, tables[0]) == (replaced.seq, 2)

    _run(server, scenario)


def test_a_lost_compare_and_set_is_refused_as_js_publish_refuses_it(server: EmbeddedNats) -> None:
    async def scenario(nc: Any, js: Any, publisher: SchedulePublisher) -> None:
        first = await publisher.publish(*_schedule("pub-cas", 1, 0))
        subject, payload, stale = _schedule("pub-cas", 2, 0)
        with pytest.raises(nats.js.errors.APIError) as refused:
            await publisher.publish(subject, payload, stale)
        assert refused.value.err_code == WRONG_LAST_SEQUENCE
        assert actual_last(refused.value.description) == first.seq
        with pytest.raises(nats.js.errors.APIError) as by_js:        # the same, through nats-py
            await js.publish(subject, payload, headers=stale)
        assert type(refused.value) is type(by_js.value)
        assert (refused.value.code, refused.value.description) == (by_js.value.code, by_js.value.description)
        assert await _stored(js, "pub-cas") == (first.seq, 1)

    _run(server, scenario)


def test_R18_a_wrong_guess_of_the_last_schedule_is_refused_read_again_and_published(server: EmbeddedNats) -> None:
    """Another instance wrote the table's schedule meanwhile (its notice lost): the
    compare-and-set is refused, the subject read once, the turn published."""
    async def scenario(nc: Any, js: Any, publisher: SchedulePublisher) -> None:
        theirs = await publisher.publish(*_schedule("pub-reread", 4, 0))
        known = LastSchedules()
        known.put("pub-reread", Last(turn=3, seq=theirs.seq - 1))      # a guess out of date
        timer = TimerPayload(table_id="pub-reread", turn=5, deadline_ms=DEADLINE_MS, seat=1)
        published = await publish_schedule(js, publisher, timer, known)
        seq, turn = await _stored(js, "pub-reread")
        assert published == Published(seq=seq, tell=True) and turn == 5 and seq > theirs.seq
        assert known.reads == 1 and known.get("pub-reread") == Last(turn=5, seq=seq, ours=True)
        older = TimerPayload(table_id="pub-reread", turn=4, deadline_ms=DEADLINE_MS, seat=1)
        assert await publish_schedule(js, publisher, older, known) is None     # superseded, as read
        assert await _stored(js, "pub-reread") == (seq, 5)

    _run(server, scenario)


def test_a_publish_whose_ack_never_comes_times_out(server: EmbeddedNats) -> None:
    """A listener that never answers (no stream): ``nats.errors.TimeoutError``, as
    ``js.publish`` raised, and nothing is left waiting; no listener at all: no stream
    responded, as ``js.publish`` says it."""
    async def scenario(nc: Any, js: Any, publisher: SchedulePublisher) -> None:
        silent = await nc.subscribe("pubtest.silent")
        with pytest.raises(nats.errors.TimeoutError):
            await publisher.publish("pubtest.silent", b"{}", {"Nats-Expected-Last-Subject-Sequence": "0"})
        assert not publisher._waiting
        await silent.unsubscribe()
        with pytest.raises(nats.js.errors.NoStreamResponseError):
            await publisher.publish("pubtest.nobody", b"{}", {})
        ack = await publisher.publish(*_schedule("pub-after-timeout", 1, 0))   # the next one is answered
        assert await _stored(js, "pub-after-timeout") == (ack.seq, 1)

    _run(server, scenario, ack_wait=0.3)


def test_the_ack_subscription_survives_a_server_restart(server: EmbeddedNats) -> None:
    """A publish written while the server is down is buffered, sent after the
    reconnect and acked on the subscription nats-py subscribed again."""
    async def scenario(nc: Any, js: Any, publisher: SchedulePublisher) -> None:
        before = await publisher.publish(*_schedule("pub-restart", 1, 0))
        await asyncio.to_thread(server.stop)
        while nc.is_connected:
            await asyncio.sleep(0.05)
        during = asyncio.create_task(publisher.publish(*_schedule("pub-restart", 2, before.seq)))
        await asyncio.sleep(0.2)
        assert not during.done()
        await asyncio.to_thread(server.start)
        after_restart = await during
        assert nc.stats["reconnects"] == 1
        assert await _stored(js, "pub-restart") == (after_restart.seq, 2)
        after = await publisher.publish(*_schedule("pub-restart", 3, after_restart.seq))
        assert await _stored(js, "pub-restart") == (after.seq, 3)

    _run(server, scenario, ack_wait=15.0)
