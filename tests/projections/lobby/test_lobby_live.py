"""The lobby on real servers, in a room of its own (``lobby_stack.py``): bots play at a
table of each game, with one-second timers and a sleeper the timer times out.

* two lobby instances keep every table's entry within a second of live play (p99 of
  the lag from each public event to the stored entry that includes it), and when play
  stops each entry is exactly what the table shows a spectator (seats, stacks, the
  hand), with the timeouts counted once each; no stored value ever carries a hidden
  card, no table's stored version ever goes back;
* anyone may ask the lobby (list, filter by game and stakes, one table) and nobody
  but the lobby may write its bucket;
* every public event delivered again (the instances' consumers recreated) changes
  nothing;
* lobbies killed with SIGKILL while tables play, and one started again (resuming its
  consumer), end with the same entries as the tables;
* ``studroom lobby`` and ``studroom watch`` show them, as the public spectator, and
  ``studroom lobby`` reads a stopped room's data folder.

Every public message passes the secrecy check (tests/secrecy.py).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import nats.js.errors
import pytest
from lobby_stack import (
    GAMES,
    Players,
    Recorder,
    Stack,
    as_stored,
    hidden_by_version,
    recording,
    seen,
    until,
)
from secrecy import watching
from studroom.domain.errors import UNKNOWN_GAME
from studroom.domain.events import TimedOut
from studroom.projections.lobby.jetstream import consumer_name
from studroom.projections.lobby.ordering import EVERY
from studroom.services.wire.subjects import LOBBY_BUCKET
from studroom.projections.lobby.queries import LobbyQuery, decode_answer, encode_query
from studroom.projections.lobby.watching import LobbyUnavailable, ask
from studroom.services.runtime.settings import (
    DATA_DIR_VAR,
    DATABASE_URL_VAR,
    NATS_CREDS_VAR,
    NATS_URL_VAR,
)
from studroom.services.runtime.observability.stats import percentile
from studroom.services.wire import protocol, subjects
from studroom.services.wire.door import identity_of

pytestmark = pytest.mark.integration

PLAY = 3.0                   # seconds of play in the first test (some thousands of events)


@pytest.fixture(scope="module")
def stack(database_url: str) -> Iterator[Stack]:
    data_dir = Path(tempfile.mkdtemp(prefix="studroom-it-lobby-"))
    stack = Stack(data_dir, database_url, f"itlobby{uuid.uuid4().hex[:6]}")
    stack.start()
    for name in LOBBIES:
        stack.start_lobby(name)
    try:
        yield stack
    finally:
        problems = stack.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    assert not problems, problems


LOBBIES = ("lobby-a", "lobby-b")
TABLES: list[str] = []       # the first test's tables, for the others


async def until_caught_up(js: Any, consumers: list[str], last_seq: int, timeout: float) -> bool:
    """Until each consumer has delivered the stream up to ``last_seq`` and has nothing
    unacknowledged."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await asyncio.sleep(0.25)
        try:
            infos = [await js.consumer_info(subjects.PUBLIC_STREAM, c) for c in consumers]
        except nats.js.errors.NotFoundError:                    # not made again yet
            continue
        if all(i.delivered.stream_seq >= last_seq and i.num_ack_pending == 0 for i in infos):
            return True
    return False


async def _play(players: Players, recorder: Recorder, seconds: float) -> None:
    """Play ``seconds``, then everyone sits out; until the tables are still."""
    await players.start()
    await asyncio.sleep(seconds)
    await players.sit_out()
    last, since = -1, time.monotonic()
    give_up = since + 60.0
    while time.monotonic() - since < 2.5:                 # more than a turn's timeout
        await asyncio.sleep(0.1)
        count = sum(len(v) for v in recorder.public.values())
        if count != last:
            last, since = count, time.monotonic()
        assert since < give_up, {t: max(v) for t, v in recorder.public.items()}   # tables still playing


def _versions_only_rise(recorder: Recorder) -> None:
    for table_id, values in recorder.values.items():
        versions = [e.version for _, _, e in values]
        assert versions == sorted(versions), f"{table_id}: a stored version went back"
        revisions = [r for _, r, _ in values]
        assert revisions == sorted(set(revisions))


def _every_value_as_the_table_was(recorder: Recorder, stored: dict[str, list[Any]]) -> int:
    """Each value the lobby stored shows what its table showed at the value's version."""
    checked = 0
    for table_id, events in stored.items():
        values = [e for _, _, e in recorder.values.get(table_id, [])]
        truth = as_stored(events, {e.version for e in values})
        for entry in values:
            assert seen(entry) == seen(truth[entry.version]), f"{table_id} v{entry.version}"
            checked += 1
    return checked


def _no_hidden_card(recorder: Recorder, stored: dict[str, list[Any]]) -> int:
    """Every stored value, against the table's hidden cards at its version."""
    checked = 0
    hidden = {t: hidden_by_version(events) for t, events in stored.items()}
    for table_id, values in recorder.values.items():
        if table_id not in hidden:
            continue
        for _, _, entry in values:
            text = msgspec.json.encode(entry).decode()
            for card in hidden[table_id][entry.version - 1]:
                assert f'"{card}"' not in text, f"{table_id} v{entry.version}: hidden card {card} in the lobby"
            checked += 1
    return checked


async def _converged(stack: Stack, recorder: Recorder, table_ids: list[str],
                     timeout: float) -> tuple[dict[str, Any], float]:
    """Wait until every table's last stored value is at the store's version (``timeout``
    counted from when the store's events are read, not while they are); the stored
    events, and the seconds it took."""
    stored = stack.stored(table_ids)
    started = time.monotonic()

    def done() -> bool:
        return all((e := recorder.latest(t)) is not None and e.version == len(stored[t]) for t in table_ids)

    assert await until(done, timeout), {t: (len(stored[t]), getattr(recorder.latest(t), "version", None))
                                        for t in table_ids}
    return stored, time.monotonic() - started


@pytest.mark.timeout(120)
def test_R23_the_lobby_shows_seats_and_stacks_within_a_second_while_bots_play(stack: Stack) -> None:
    players = Players(stack, f"lv{uuid.uuid4().hex[:4]}t")
    TABLES[:] = players.table_ids

    async def main() -> tuple[Recorder, dict[str, Any], float]:
        spectator = await stack.connect_as("spectator", "public")
        try:
            async with recording(stack) as recorder, watching(spectator) as watch:
                try:
                    await _play(players, recorder, PLAY)
                    stored, converged = await _converged(stack, recorder, players.table_ids, timeout=1.0)
                    await watch.check(lambda t: stack.stored([t])[t], players.table_ids)
                finally:
                    await players.stop()
            return recorder, stored, converged
        finally:
            await spectator.drain()

    recorder, stored, converged = asyncio.run(main())
    lags = recorder.lags_ms()
    events = sum(len(e) for e in stored.values())
    print(f"{events} events, {len(lags)} lags: p50 {percentile(lags, 50):.0f} ms, p99 {percentile(lags, 99):.0f} ms, "
          f"max {max(lags):.0f} ms; {sum(len(v) for v in recorder.values.values())} values stored")
    assert events > 500 and len(lags) >= 0.9 * events
    assert percentile(lags, 99) < 1000, "the lobby lags more than a second"
    assert converged < 1.0
    # A table's entry is written at most once every EVERY (0.25 s, issue 20): 3 tables x 3 s
    # of play give some 36 values, and the writes at the start and the end.
    written = len(stored) * PLAY / EVERY * 0.8
    assert _every_value_as_the_table_was(recorder, stored) > written
    for table_id, events_of in stored.items():
        entry = recorder.latest(table_id)
        assert entry is not None and entry.version == len(events_of)
        assert entry.timeouts == sum(isinstance(e, TimedOut) for e in events_of)
        assert entry.hands > 0 and entry.figures.hands_per_hour == entry.hands
    assert recorder.latest(TABLES[0]).timeouts > 0           # the sleeper's
    _versions_only_rise(recorder)
    assert _no_hidden_card(recorder, stored) > written


@pytest.mark.timeout(30)
def test_anyone_may_ask_the_lobby_and_only_the_lobby_writes_it(stack: Stack) -> None:
    assert TABLES, "runs after the first test"

    async def main() -> None:
        errors: list[str] = []

        async def error(e: Exception) -> None:
            errors.append(str(e))

        spectator = await stack.connect_as("spectator", "public")
        player = await stack.connect_as("player", f"{TABLES[0]}-p0")
        writer = await stack.connect_as("spectator", "public", error_cb=error)

        async def ask(nc: Any, **query: Any) -> Any:
            msg = await nc.request(subjects.lobby_query(*identity_of(nc)), encode_query(LobbyQuery(**query)),
                                   timeout=2.0)
            return decode_answer(msg.data)

        try:
            every = await ask(spectator)
            ours = [e for e in every.tables if e.table_id in TABLES]
            assert every.ok and [e.table_id for e in ours] == sorted(TABLES)
            assert all(e.hand is None and not e.activity for e in ours)        # a list is light
            stored = stack.stored(TABLES)
            assert all(e.version == len(stored[e.table_id]) and e.hands > 0 for e in ours)
            five = await ask(spectator, game="five_card_stud")
            assert [e.table_id for e in five.tables if e.table_id in TABLES] == [TABLES[GAMES.index("five_card_stud")]]
            assert {e.table_id for e in (await ask(player, stakes="20/40")).tables} >= set(TABLES)
            assert (await ask(spectator, stakes="1/2")).tables == []
            one = await ask(player, table=TABLES[1])
            assert one.ok and [e.table_id for e in one.tables] == [TABLES[1]] and one.tables[0].hand is not None
            unknown = await ask(spectator, table="nosuchtable")
            assert not unknown.ok and unknown.error.code == protocol.UNKNOWN_TABLE
            bad = decode_answer((await spectator.request(subjects.lobby_query("spectator", "public"), b'{"game": 7', timeout=2.0)).data)
            assert not bad.ok and bad.error.code == protocol.BAD_REQUEST
            assert (await ask(spectator, game="poker")).error.code == UNKNOWN_GAME  # type: ignore[union-attr]
            # Nobody but the lobby writes the bucket.
            await writer.publish(f"$KV.{LOBBY_BUCKET}.{TABLES[0]}", b'{"forged": true}')
            await writer.flush()
            assert await until(lambda: bool(errors), 2.0)
            assert "permissions violation" in errors[0].lower()
        finally:
            for nc in (spectator, player, writer):
                await nc.drain()

    asyncio.run(main())


@pytest.mark.timeout(90)
def test_every_event_delivered_again_changes_nothing(stack: Stack) -> None:
    assert TABLES, "runs after the first test"

    async def main() -> None:
        nc = await stack.connect_as("service", "lobby")
        js = nc.jetstream()
        kv = await js.key_value(LOBBY_BUCKET)
        try:
            before = {t: (await kv.get(t)).revision for t in TABLES}
            stream = await js.stream_info(subjects.PUBLIC_STREAM)
            consumers = [consumer_name(name) for name in LOBBIES]
            for consumer in consumers:                    # each lobby makes its own again:
                await js.delete_consumer(subjects.PUBLIC_STREAM, consumer)   # every event comes again
            assert await until_caught_up(js, consumers, stream.state.last_seq, timeout=60), \
                "the lobbies did not read the public stream again"
            assert {t: (await kv.get(t)).revision for t in TABLES} == before
        finally:
            await nc.drain()

    asyncio.run(main())
    for name in LOBBIES:
        assert "Traceback" not in stack.log_of(name), stack.log_of(name)[-3000:]


KILLED_PLAY = 4.0       # seconds of play around the kill


@pytest.mark.timeout(120)
def test_a_lobby_killed_while_tables_play_leaves_the_entries_right_and_resumes(stack: Stack) -> None:
    """One of two lobby instances is killed mid-batch and restarted: the entries stay
    right (the other instance carries on; nothing the killed one half-wrote shows).
    Every instance killed at once: checked by hand only (docs/design/lobby.md)."""
    players = Players(stack, f"lk{uuid.uuid4().hex[:4]}t")

    async def killing() -> None:
        await asyncio.sleep(1.0)
        stack.kill_lobby(LOBBIES[0])                        # SIGKILL, mid-batch
        await asyncio.sleep(1.5)
        stack.start_lobby(LOBBIES[0])                       # resumes its consumer

    async def main() -> None:
        async with recording(stack) as recorder:
            try:
                await asyncio.gather(_play(players, recorder, KILLED_PLAY), killing())
                # the restarted lobby catches up on every event it missed (no speed asserted:
                # a loaded CI machine is slow to restart a process)
                stored, _ = await _converged(stack, recorder, players.table_ids, timeout=30.0)
            finally:
                await players.stop()
            # at most one write per table every EVERY: 3 tables x 4 s give at most ~50 values,
            # and a lobby down for 1.5 s of them fewer; half of the most is a real check
            assert _every_value_as_the_table_was(recorder, stored) > len(stored) * KILLED_PLAY / EVERY / 2
            _versions_only_rise(recorder)

    asyncio.run(main())


async def _every_lobby_answering(stack: Stack, timeout: float = 30.0) -> None:
    """Start the lobbies an earlier test killed, and wait until the lobby answers."""
    for name in LOBBIES:
        if name not in stack.lobbies:
            stack.start_lobby(name)
    spectator = await stack.connect_as("spectator", "public")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                await ask(spectator, LobbyQuery())
                return
            except LobbyUnavailable:
                assert time.monotonic() < deadline, "the lobby does not answer"
    finally:
        await spectator.close()


def _studroom(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "studroom.services.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.mark.timeout(120)
def test_lobby_and_watch_at_the_terminal_as_the_spectator(stack: Stack) -> None:
    players = Players(stack, f"lw{uuid.uuid4().hex[:4]}t")
    env = {k: v for k, v in os.environ.items() if k != DATABASE_URL_VAR}
    env |= {NATS_URL_VAR: stack.url, NATS_CREDS_VAR: str(stack.authority.ensure("spectator", "public")),
            DATA_DIR_VAR: str(stack.data_dir)}

    async def main() -> list[subprocess.CompletedProcess[str]]:
        await _every_lobby_answering(stack)
        async with recording(stack) as recorder:
            try:
                play = asyncio.create_task(_play(players, recorder, 4.0))
                await asyncio.sleep(1.0)
                shown = await asyncio.gather(*(asyncio.to_thread(_studroom, *args, env=env) for args in (
                    ("lobby",), ("lobby", "--game", "five_card_stud"),
                    ("watch", players.table_ids[1], "--lang", "de", "--for", "1.5"),
                    ("watch", "nosuchtable", "--for", "1"))))
                await play
            finally:
                await players.stop()
        return shown

    lobby, five, watch, missing = asyncio.run(main())
    ids = players.table_ids
    assert lobby.returncode == 0, lobby.stderr
    assert all(table_id in lobby.stdout for table_id in ids)
    assert "Seven Card Stud Hi/Lo" in lobby.stdout and "20/40" in lobby.stdout and f"{ids[0]}-p0" in lobby.stdout
    assert five.returncode == 0 and ids[2] in five.stdout and ids[0] not in five.stdout
    assert watch.returncode == 0, watch.stderr
    assert "Platz" in watch.stdout and f"{ids[1]}-p0" in watch.stdout and "20/40" in watch.stdout
    assert missing.returncode == 1 and protocol.UNKNOWN_TABLE in missing.stderr
    for table_id in TABLES:                     # played minutes ago: the figures of the hour, its service up
        state, hands_per_hour = _state_and_hands_per_hour(lobby.stdout, table_id)
        assert state in ("playing", "waiting") and hands_per_hour > 0, lobby.stdout


@pytest.mark.timeout(90)
def test_the_lobby_of_a_stopped_room(stack: Stack) -> None:
    assert TABLES, "runs after the first test"
    assert not stack.stop()
    env = {k: v for k, v in os.environ.items() if k not in (NATS_URL_VAR, DATABASE_URL_VAR, NATS_CREDS_VAR)}
    env[DATA_DIR_VAR] = str(stack.data_dir)
    lobby = _studroom("lobby", env=env)
    assert lobby.returncode == 0, lobby.stderr
    for table_id in TABLES:                     # issue 18: "live" and "-", 0 before
        state, hands_per_hour = _state_and_hands_per_hour(lobby.stdout, table_id)
        assert state == "stopped" and hands_per_hour > 0, lobby.stdout
    watch = _studroom("watch", TABLES[0], "--lang", "de", env=env)
    assert watch.returncode == 0 and " · gestoppt" in watch.stdout.splitlines()[0], watch.stderr


def _state_and_hands_per_hour(lobby: str, table_id: str) -> tuple[str, int]:
    """A table's state and hands per hour in `studroom lobby`'s text (its row: ... #hand,
    state, average pot, hands per hour ...; a table that played has an average pot)."""
    cells = next(line for line in lobby.splitlines() if line.startswith(table_id + " ")).split()
    hand = next(i for i, cell in enumerate(cells) if cell.startswith("#"))
    return cells[hand + 1], int(cells[hand + 3].replace(",", ""))
