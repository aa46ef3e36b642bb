"""The lobby heals, on real servers, in a room of its own (``lobby_stack.py``): while bots
play, each table's entry is damaged as a mistake or an attacker would (a value that is
no entry, a delete, a purge; then a version the stream never had, an older value put
back, another table's entry); each comes back, and when play stops every entry is
exactly what a lobby from zero makes of the public stream.  A quiet table's value
deleted, purged or overwritten comes back without any new event, also when the lobby
was away meanwhile.  Nobody but the
lobby service may write the bucket: every other identity is refused by the server."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import nats.js.errors
import pytest
from lobby_stack import Players, Stack, until
from studroom.projections.lobby.entry import LobbyEntry, decode, encode
from studroom.services.wire.subjects import LOBBY_BUCKET
from studroom.projections.lobby.ordering import Place, place
from studroom.projections.lobby.projection import apply
from studroom.services.auth.powers import IDENTITIES
from studroom.services.wire import subjects
from studroom.services.wire.event_messages import events_of
from studroom.services.wire.pull import stamp_ms

pytestmark = pytest.mark.integration

LOBBY = "lobby-h"


@pytest.fixture(scope="module")
def stack(database_url: str) -> Iterator[Stack]:
    data_dir = Path(tempfile.mkdtemp(prefix="studroom-it-heal-"))
    stack = Stack(data_dir, database_url, f"itheal{uuid.uuid4().hex[:6]}")
    stack.start()
    stack.start_lobby(LOBBY)
    try:
        yield stack
    finally:
        problems = stack.stop()
        log = stack.log_of(LOBBY)
        shutil.rmtree(data_dir, ignore_errors=True)
    assert not problems, (problems, log[-3000:])


async def from_zero(js: Any, table_id: str) -> LobbyEntry:
    """The entry a lobby from zero makes of the table's public messages, delivered by a
    consumer of its own (as the lobby's are)."""
    subject = subjects.public_events(table_id)
    last = (await js.get_last_msg(subjects.PUBLIC_STREAM, subject)).seq
    sub = await js.subscribe(subject, ordered_consumer=True)
    entry: LobbyEntry | None = None
    try:
        while True:
            msg = await sub.next_msg(timeout=5.0)
            events, seq = events_of(msg), msg.metadata.sequence.stream
            for version, event in events:
                where = place(entry.version if entry is not None else 0, version, version)
                assert where is not Place.GAP, f"{table_id}: the stream lacks versions before {version}"
                if where is Place.NEXT:
                    entry = apply(entry, event, version, seq, stamp_ms(msg) or 0)
            if seq >= last:
                break
    finally:
        await sub.unsubscribe()
    assert entry is not None
    return entry


async def value_of(kv: Any, table_id: str) -> LobbyEntry | None:
    """The table's entry in the bucket; None if missing or no entry of it."""
    try:
        entry = decode((await kv.get(table_id)).value or b"")
    except (nats.js.errors.KeyNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    return entry if entry.table_id == table_id else None


async def until_async(check: Callable[[], Awaitable[bool]], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


async def until_still(js: Any, quiet: float = 2.5) -> None:
    """Until the public stream has had no new message for ``quiet`` seconds."""
    last, since = -1, time.monotonic()
    while time.monotonic() - since < quiet:
        await asyncio.sleep(0.1)
        seq = (await js.stream_info(subjects.PUBLIC_STREAM)).state.last_seq
        if seq != last:
            last, since = seq, time.monotonic()


def damages(kv: Any, older: dict[str, bytes]) -> dict[str, Callable[[str, str], Awaitable[Any]]]:
    """Ways to damage a table's value (``other``: another table)."""

    async def ahead(table_id: str, other: str) -> None:
        entry = decode((await kv.get(table_id)).value)
        entry.players[0].stack = 1_000_000
        await kv.put(table_id, encode(msgspec.structs.replace(entry, version=entry.version + 1_000)))

    async def another_table_s(table_id: str, other: str) -> None:
        await kv.put(table_id, (await kv.get(other)).value)

    return {
        "no entry": lambda table_id, other: kv.put(table_id, b'{"ok": true, "tables": []}'),
        "deleted": lambda table_id, other: kv.delete(table_id),
        "purged": lambda table_id, other: kv.purge(table_id),
        "a version the stream never had": ahead,
        "an older value put back": lambda table_id, other: kv.put(table_id, older[table_id]),
        "another table's": another_table_s,
    }


@pytest.mark.timeout(120)
def test_a_damaged_entry_comes_back_as_a_lobby_from_zero_makes_it(stack: Stack) -> None:
    players = Players(stack, f"lh{uuid.uuid4().hex[:4]}t")
    tables = players.table_ids

    async def main() -> None:
        nc = await stack.connect_as("service", "lobby")
        js = nc.jetstream()
        try:
            await players.start()
            kv = await _bucket(js, tables)
            # Half a second of play between two looks: the bots play some hundred events.
            await asyncio.sleep(0.5)
            older = {t: (await kv.get(t)).value for t in tables}
            await asyncio.sleep(0.5)
            how = damages(kv, older)
            rounds = [("no entry", "deleted", "purged"),
                      ("a version the stream never had", "an older value put back", "another table's")]
            for kinds in rounds:                                   # while the tables play
                for table_id, kind in zip(tables, kinds, strict=True):
                    await how[kind](table_id, tables[0] if table_id != tables[0] else tables[1])
                await asyncio.sleep(0.5)
            await players.sit_out()
            await until_still(js)
            stored = stack.stored(tables)

            async def converged() -> bool:
                return all([(e := await value_of(kv, t)) is not None and e.version == len(stored[t]) for t in tables])

            assert await until_async(converged, 20.0), {t: getattr(await value_of(kv, t), "version", None)
                                                        for t in tables}
            truth = {t: await from_zero(js, t) for t in tables}
            for table_id in tables:
                assert await value_of(kv, table_id) == truth[table_id], table_id

            async def healed() -> bool:
                return all([await value_of(kv, t) == truth[t] for t in tables])

            # The tables are still now: a damaged value comes back without a new event,
            # also when the lobby was away meanwhile (it has no value of its own to start
            # from: the whole table is read back).
            for restarted in (False, True):
                if restarted:
                    stack.stop_lobby(LOBBY)
                for table_id, kind in zip(tables, ("deleted", "purged", "no entry"), strict=True):
                    await how[kind](table_id, tables[0])
                if restarted:
                    stack.start_lobby(LOBBY)
                assert await until_async(healed, 20.0), restarted
        finally:
            await players.stop()
            await nc.drain()

    asyncio.run(main())
    log = stack.log_of(LOBBY)
    print("", *(line for line in log.splitlines() if "rebuilt from the public stream" in line), sep="\n")
    assert "Traceback" not in log, log[-3000:]
    assert log.count("not the lobby's own") >= 4              # no entry, another table's, a version too far
    assert log.count("read back after this instance's last write") >= 6
    assert log.count("read back from the table's first") == 3


async def _bucket(js: Any, tables: list[str], wait: float = 20.0) -> Any:
    """The lobby's bucket, once it has an entry of every table."""

    async def ready() -> bool:
        try:
            kv = await js.key_value(LOBBY_BUCKET)
        except nats.js.errors.BucketNotFoundError:
            return False
        return all([await value_of(kv, t) is not None for t in tables])

    assert await until_async(ready, wait), "the lobby wrote no entry"
    return await js.key_value(LOBBY_BUCKET)


def _others(owner: str) -> list[tuple[str, str]]:
    """Every identity but service ``owner``'s own: the other services, their doors, an
    operator, a player and the spectator."""
    return [("service", name) for name in IDENTITIES if name != owner] + [
        ("operator", "floor"), ("player", "mallory"), ("spectator", "public")]


async def _refused(stack: Stack, role: str, name: str, writes: list[str], requests: list[str]) -> None:
    """Each of ``writes`` (published) and ``requests`` (asked, with a reply subject) is a
    permissions violation for ``role``/``name``: the server drops it."""
    errors: list[str] = []

    async def error(e: Exception) -> None:
        errors.append(str(e))

    def violations() -> list[str]:
        return [e for e in errors if "permissions violation for publish" in e.lower()]

    nc = await stack.connect_as(role, name, error_cb=error)
    try:
        for subject in writes:
            await nc.publish(subject, b'{"forged": true}')
        for subject in requests:               # sent without waiting: a refused one has no answer
            await nc.publish(subject, b"{}", reply=nc.new_inbox())
        await nc.flush()
        wanted = len(writes) + len(requests)
        assert await until(lambda: len(violations()) == wanted, 2.0), f"{role}.{name}: {errors}"
    finally:
        await nc.close()


@pytest.mark.timeout(60)
def test_only_the_lobby_service_may_write_its_bucket(stack: Stack) -> None:
    """Every other identity is refused by the server: a write on the bucket's subjects,
    and the JetStream requests that would purge, delete or change its stream."""
    writes = [f"$KV.{LOBBY_BUCKET}.forged"]
    requests = [f"$JS.API.STREAM.{api}.KV_{LOBBY_BUCKET}" for api in ("PURGE", "DELETE", "UPDATE")]

    async def main() -> None:
        await asyncio.gather(*(_refused(stack, role, name, writes, requests) for role, name in _others("lobby")))

    asyncio.run(main())


@pytest.mark.timeout(60)
def test_only_the_relay_manages_the_event_streams_and_only_the_timer_its_own(stack: Stack) -> None:
    """The public and private streams are the relay's, the timers' stream the timer's:
    any other identity asking to purge, delete, change or restore one, or delete a
    message of it, is refused by the server (the others consume them, nothing more)."""
    managing = ("PURGE", "DELETE", "UPDATE", "CREATE", "RESTORE", "MSG.DELETE")

    def requests(*streams: str) -> list[str]:
        return [f"$JS.API.STREAM.{api}.{stream}" for stream in streams for api in managing]

    async def main() -> None:
        await asyncio.gather(
            *(_refused(stack, role, name, [], requests(subjects.PUBLIC_STREAM, subjects.PRIVATE_STREAM))
              for role, name in _others("relay")),
            *(_refused(stack, role, name, [], requests(subjects.TIMER_STREAM)) for role, name in _others("timer")))

    asyncio.run(main())
