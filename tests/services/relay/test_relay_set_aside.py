"""The relay under its service credentials on a secure NATS of the test's own
(operator mode, as the room and deploy/ run it), against real PostgreSQL stores:

* nothing poisons the pipeline: events the relay cannot publish, stored between good
  ones, are set aside as dead letters (a loud error, a record in KV bucket
  ``studroom_dead_letters``) and every other message of the store goes out exactly
  once; a relay restarted over the same batch publishes and sets aside nothing twice;
* the private stream forgets players' down cards after its max age (R33), and a relay
  restarted after that does not publish them again.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import nats.js.errors
import pytest
from nats.js import api
from relay_stack import SCHEMAS, Monitor, Writer, fetch_all, parts_of, public_events, renamed, start_relay
from studroom.domain import simulate, views
from studroom.domain.events import CardsDealt, Event, HandStarted, PlayerSatDown
from studroom.services.auth.authority import Authority
from studroom.services.relay.config import RelayConfig
from studroom.services.relay.dead_letters import DeadLetter
from studroom.services.wire.subjects import DEAD_LETTER_BUCKET
from studroom.services.relay.relay import Relay
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.store.port import Notification
from studroom.services.store.postgres import PostgresEventStore
from studroom.services.wire import subjects

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

STORE = SCHEMAS[0]
MAX_MSG_SIZE = 256 * 1024            # the public stream's own limit in the first test


@pytest.fixture
def secure_server(private_dir: Path) -> Iterator[EmbeddedNats]:
    """A NATS in operator mode of this test's own (the streams start empty)."""
    with EmbeddedNats(private_dir) as server:
        yield server


@pytest.fixture
def authority(secure_server: EmbeddedNats) -> Authority:
    assert secure_server.authority is not None
    return secure_server.authority


def _hand(seed: int) -> list[Event]:
    table, events = simulate.new_table("seven_card_stud", 3)
    return events + simulate.play_hand(table, random.Random(seed))


def _poison(store: PostgresEventStore) -> None:
    """Tables whose messages cannot all be published (written as rows: the door now
    refuses such commands): a player named Zoë, a table id with a space, a 2 MB and a
    300 kB command id, a private copy for a seat nobody holds."""
    hand = _hand(7)
    dealt = next(e for e in hand if isinstance(e, CardsDealt))
    store.append([
        ("zoe", 0, renamed(_hand(5), "p1", "Zoë")),
        ("bad table", 0, hand),
        ("big", 0, [hand[0], msgspec.structs.replace(hand[1], command_id="9" * 2_000_000), *hand[2:6]]),
        ("refused", 0, [hand[0], msgspec.structs.replace(hand[1], command_id="8" * 300_000), *hand[2:6]]),
        ("ghost", 0, [hand[0], dealt]),
    ])


def _expected(stores: dict[str, PostgresEventStore]) -> tuple[set[str], set[str]]:
    """What the stores' events give: ``public:<store>:<table>:<version>`` for each
    public view, the ``Nats-Msg-Id`` of each private copy, and the keys of those that
    cannot be published (worked out here case by case, not by the outbox)."""
    ids: set[str] = set()
    dead: set[str] = set()
    for schema, store in stores.items():
        holders: dict[str, dict[int, str]] = collections.defaultdict(dict)
        for n in store.read_notifications(1, 10**6):
            seats = holders[n.stream_id]
            if _public_is_dead(n):
                dead.add(f"{schema}.{n.id}.public")
            else:
                ids.add(f"public:{schema}:{n.stream_id}:{n.version}")
            for seat in views.owners_of_private_cards(n.event):
                if n.stream_id == "bad table" or seats.get(seat) in (None, "Zoë"):
                    dead.add(f"{schema}.{n.id}.seat{seat}")
                else:
                    ids.add(f"{schema}:{n.id}:{seat}")
            if isinstance(n.event, HandStarted):
                seats.update({s.seat: s.player for s in n.event.seats})
            elif isinstance(n.event, PlayerSatDown):
                seats[n.event.seat] = n.event.player
    return ids, dead


def _public_is_dead(n: Notification) -> bool:
    return n.stream_id == "bad table" or len(n.event.command_id or "") >= MAX_MSG_SIZE


async def _published_ids(monitor: Monitor) -> list[str]:
    """What the streams hold, named as :func:`_expected` names it."""
    public = await fetch_all(monitor.js, subjects.PUBLIC_STREAM, subjects.all_public_events())
    private = await fetch_all(monitor.js, subjects.PRIVATE_STREAM, subjects.all_private_events())
    store = {m.headers["Nats-Msg-Id"]: m.headers["Nats-Msg-Id"].split(":")[0] for m in public}
    return ([f"public:{store[m.headers['Nats-Msg-Id']]}:{m.subject.split('.')[2]}:{version}"
             for m in public for version, _ in parts_of(m)]
            + [m.headers["Nats-Msg-Id"] for m in private])


async def _dead_letters(monitor: Monitor) -> dict[str, Any]:
    """key -> (revision, record) of the dead-letter bucket."""
    kv = await monitor.js.key_value(DEAD_LETTER_BUCKET)
    try:
        keys = await kv.keys()
    except nats.js.errors.NoKeysError:
        return {}
    return {key: ((entry := await kv.get(key)).revision, msgspec.json.decode(entry.value, type=DeadLetter))
            for key in keys}


async def _until(check: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


def test_unpublishable_events_are_set_aside_and_the_rest_flows_exactly_once_across_a_restart(
    authority: Authority, secure_server: EmbeddedNats, database: str, stores: dict[str, PostgresEventStore],
    caplog: pytest.LogCaptureFixture,
) -> None:
    writer = Writer(stores, tables_per_store=2, hands=4, seed=11)
    writer.write(len(writer.queue) // 2)
    _poison(stores[STORE])
    writer.write()
    wanted, dead = _expected(stores)
    relay_creds = authority.ensure("service", "relay")
    # One batch holds everything and its position is only written at a clean stop:
    # a cancelled relay leaves the whole batch to the next one's recovery.
    config = RelayConfig(batch_size=5000, position_interval=600.0)
    caplog.set_level(logging.INFO, logger="studroom.services.relay")

    async def scenario() -> None:
        # as the relay: only the relay may create the public stream
        async with Monitor(secure_server.url, authority.ensure("service", "relay"), counting=False) as monitor:
            # JetStream itself refuses the 300 kB message: the public stream takes 256 kB at most.
            await monitor.js.add_stream(api.StreamConfig(
                name=subjects.PUBLIC_STREAM, subjects=[subjects.all_public_events()], max_msg_size=MAX_MSG_SIZE))

            first, _ = start_relay(secure_server.url, database, config, asyncio.Event(),
                                   relay_creds)

            async def all_out() -> bool:
                try:
                    published, letters = await _published_ids(monitor), await _dead_letters(monitor)
                except nats.js.errors.NotFoundError:
                    return False                          # the relay has not created them yet
                return len(published) == len(wanted) and len(letters) == len(dead)

            await _until(all_out, "the first relay did not publish and set aside everything")
            first.cancel()                                # a crash: the position is not recorded
            with pytest.raises(asyncio.CancelledError):
                await first
            letters = await _dead_letters(monitor)

            stop = asyncio.Event()
            second, ready = start_relay(secure_server.url, database, config, stop, relay_creds)
            await _until(lambda: _caught_up(ready, stores), "the second relay did not catch up")
            stop.set()
            relay = await asyncio.wait_for(second, 20)

            published = await _published_ids(monitor)
            assert sorted(published) == sorted(wanted)    # each once: nothing missing, nothing twice
            assert set(letters) == dead
            assert await _dead_letters(monitor) == letters   # not one written again
            stats = relay.stats()
            assert sum(s.dead_letters for s in stats.values()) == 0
            assert sum(s.messages for s in stats.values()) == 0
            # (a view set aside between two published ones counts as found: the scan
            # knows how far a table's views got, not which of them were set aside)
            assert sum(s.skipped for s in stats.values()) >= len(wanted)

        reasons: dict[str, list[str]] = collections.defaultdict(list)
        for _, letter in letters.values():
            reasons[letter.table].append(letter.reason)
        assert reasons.keys() == {"zoe", "bad table", "big", "refused", "ghost"}
        assert all("'Zoë'" in r for r in reasons["zoe"])
        assert all("'bad table'" in r for r in reasons["bad table"])
        assert all("nobody holds seat" in r for r in reasons["ghost"])
        [big] = reasons["big"]
        assert "more than the server's max_payload" in big
        [refused] = reasons["refused"]
        assert refused.startswith("JetStream refused it: 10054")
        alarms = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and "SET ASIDE" in r.getMessage()]
        assert len(alarms) == len(dead)

    asyncio.run(scenario())


async def _caught_up(ready: list[Relay], stores: dict[str, PostgresEventStore]) -> bool:
    if not ready:
        return False
    ends = {schema: store.max_notification_id() for schema, store in stores.items()}
    return all(s.acked == ends[s.name] for s in ready[0].stores)


def test_R33_private_copies_are_gone_after_the_private_max_age_and_not_published_again(
    authority: Authority, secure_server: EmbeddedNats, database: str, stores: dict[str, PostgresEventStore],
) -> None:
    writer = Writer(stores, tables_per_store=2, hands=3, seed=12)
    writer.write()
    relay_creds = authority.ensure("service", "relay")
    config = RelayConfig(private_max_age=2.0, public_max_age=3600.0)

    async def count(monitor: Monitor, stream: str) -> tuple[int, int]:
        state = (await monitor.js.stream_info(stream)).state
        return state.messages, state.last_seq

    async def scenario() -> None:
        async with Monitor(secure_server.url, authority.ensure("service", "projections")) as monitor:
            for attempt in range(2):                      # the second relay finds them expired
                stop = asyncio.Event()
                task, ready = start_relay(secure_server.url, database, config, stop,
                                          relay_creds)
                await _until(lambda: _caught_up(ready, stores), "the relay did not catch up")
                public, private = await count(monitor, subjects.PUBLIC_STREAM), await count(
                    monitor, subjects.PRIVATE_STREAM)
                if attempt == 0:
                    assert private[0] > 0                 # just published, not yet two seconds old
                    expired_at = private[1]
                    await _until(lambda: _no_private(monitor), "private copies outlived their max age", 10)
                else:
                    assert private == (0, expired_at)     # nothing published again
                assert len(await public_events(monitor.js)) == writer.written
                stop.set()
                await asyncio.wait_for(task, 20)
            info = await monitor.js.stream_info(subjects.PRIVATE_STREAM)
            assert info.config.max_age == 2.0

    asyncio.run(scenario())


async def _no_private(monitor: Monitor) -> bool:
    return (await monitor.js.stream_info(subjects.PRIVATE_STREAM)).state.messages == 0
