"""The lobby at a terminal, live: asking the lobby, following its bucket's writes
(``studroom lobby --watch``), and following one table's public events from its lobby
entry on (``studroom watch TABLE``).  A client like any other: it needs only what
every identity may do (ask ``studroom.lobby.query.<role>.<name>`` in its own name, read
public subjects)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import IO, Any, Final

import msgspec
from studroom.domain.events import Event
from studroom.services.wire import subjects
from studroom.services.wire.door import identity_of
from studroom.services.wire.event_messages import UNREADABLE, events_of
from studroom.services.wire.subjects import LOBBY_BUCKET

from .entry import LobbyEntry, decode
from .projection import apply
from .queries import LobbyQuery, decode_answer, encode_query, matches
from .rendering import lobby_text, table_text

CLEAR: Final = "\x1b[H\x1b[2J"      # cursor home, clear the screen
TICK: Final = 0.5                   # seconds between redraws (the countdowns)
BEHIND_FOR: Final = 1.0             # events beyond a gap this long: ask the lobby again
REFRESH: Final = 10.0               # seconds between the lobby's answers in ``studroom lobby --watch``
NOBODY: Final = ("spectator", "public")   # who asks on a server without identities


class LobbyUnavailable(Exception):
    """The lobby did not answer as asked (no lobby running, an unknown table)."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def ask(nc: Any, query: LobbyQuery, timeout: float = 2.0) -> list[LobbyEntry]:
    """The lobby's answer to ``query``; LobbyUnavailable when there is none."""
    import nats.errors

    try:
        asker = identity_of(nc) or NOBODY
        msg = await nc.request(subjects.lobby_query(*asker), encode_query(query), timeout=timeout)
    except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
        raise LobbyUnavailable("the lobby does not answer: is `studroom serve lobby` running?") from None
    answer = decode_answer(msg.data)
    if answer.error is not None:
        raise LobbyUnavailable(f"{answer.error.code}: {answer.error.message}")
    return answer.tables


class Screen:
    """Frames to a terminal (redrawn in place) or to a file or pipe (each new frame once)."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.tty = out.isatty()
        self._last = ""

    def show(self, frame: str) -> None:
        if frame == self._last:
            return
        self._last = frame
        self.out.write(CLEAR + frame + "\n" if self.tty else frame + "\n\n")
        self.out.flush()


class LobbyPicture:
    """The tables of a query, from the lobby's answers and its bucket's writes.  A write
    carries the table's figures as of its event and no word of its service; an answer
    carries both as of the moment asked: the newer picture of a table wins, and an
    answer's word on the service stays until the next answer."""

    def __init__(self, query: LobbyQuery) -> None:
        self.query = query
        self.tables: dict[str, LobbyEntry] = {}

    def answered(self, entries: list[LobbyEntry]) -> None:
        for entry in entries:
            known = self.tables.get(entry.table_id)
            if known is None or entry.version >= known.version:
                self.tables[entry.table_id] = entry
            else:
                known.served = entry.served

    def written(self, table_id: str, entry: LobbyEntry | None) -> None:
        """A write of the bucket (None: the table's value deleted)."""
        known = self.tables.get(table_id)
        if entry is None:
            self.tables.pop(table_id, None)
        elif matches(entry, self.query) and (known is None or entry.version > known.version):
            entry.served = known.served if known is not None else True
            self.tables[table_id] = entry

    def bucket_message(self, msg: Any) -> None:
        """A message of the lobby bucket's subjects (a write or a delete; one that does
        not decode changes nothing)."""
        table_id = msg.subject.rsplit(".", 1)[-1]
        if msg.headers and msg.headers.get("KV-Operation"):
            self.written(table_id, None)
            return
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            self.written(table_id, decode(msg.data))

    def text(self) -> str:
        return lobby_text(list(self.tables.values()))


async def watch_lobby(nc: Any, query: LobbyQuery, screen: Screen, stop: asyncio.Event) -> None:
    """The lobby's tables, redrawn as its bucket is written, until ``stop``; asked again
    every ``REFRESH`` seconds, so that the figures of tables where nothing happens slide
    with the hour and a service's stop shows."""
    picture = LobbyPicture(query)
    picture.answered(await ask(nc, query))

    async def written(msg: Any) -> None:
        picture.bucket_message(msg)

    asked = time.monotonic()

    async def refresh() -> None:
        nonlocal asked
        if time.monotonic() - asked >= REFRESH:
            asked = time.monotonic()
            picture.answered(await ask(nc, query))

    sub = await nc.subscribe(subjects.lobby_changes(LOBBY_BUCKET), cb=written)
    try:
        await _redraw(picture.text, screen, stop, refresh)
    finally:
        await sub.unsubscribe()


class Follower:
    """One table's entry kept current from its public events (offered one by one, a
    message's in order): each applied once, in version order; events beyond a gap wait
    until the entry reaches them."""

    def __init__(self) -> None:
        self.entry: LobbyEntry | None = None
        self._pending: dict[int, tuple[Event, int]] = {}
        self.behind_since: float | None = None

    def offer(self, version: int, event: Event, at_ms: int) -> None:
        if self.entry is None or version > self.entry.version:
            self._pending[version] = (event, at_ms)
            self._advance()

    def start(self, entry: LobbyEntry) -> None:
        """The lobby's entry, unless the one followed is newer."""
        if self.entry is None or entry.version > self.entry.version:
            self.entry = entry
            self._advance()

    def _advance(self) -> None:
        entry = self.entry
        if entry is None:
            return
        for version in sorted(v for v in self._pending if v <= entry.version):
            del self._pending[version]
        while entry.version + 1 in self._pending:
            event, at_ms = self._pending.pop(entry.version + 1)
            entry = apply(entry, event, entry.version + 1, entry.seq, at_ms)
        self.entry = entry
        self.behind_since = (self.behind_since or time.monotonic()) if self._pending else None


async def watch_table(nc: Any, table_id: str, lang: str, screen: Screen, stop: asyncio.Event) -> None:
    """One table as a spectator sees it, redrawn as its hand runs, until ``stop``."""
    follower = Follower()

    async def public(msg: Any) -> None:
        """A message of the table's events (one that does not decode, or says no
        version, is passed over: a gap the lobby's answer closes)."""
        with contextlib.suppress(*UNREADABLE):
            at_ms = now_ms()
            for version, event in events_of(msg):
                follower.offer(version, event, at_ms)

    sub = await nc.subscribe(subjects.public_events(table_id), cb=public)
    try:
        await nc.flush()
        follower.start((await ask(nc, LobbyQuery(table=table_id)))[0])

        def frame() -> str:
            assert follower.entry is not None
            return table_text(follower.entry, now_ms(), lang)

        async def catch_up() -> None:
            behind = follower.behind_since
            if behind is not None and time.monotonic() - behind > BEHIND_FOR:
                follower.behind_since = time.monotonic()
                follower.start((await ask(nc, LobbyQuery(table=table_id)))[0])

        await _redraw(frame, screen, stop, catch_up)
    finally:
        await sub.unsubscribe()


async def _redraw(frame: Callable[[], str], screen: Screen, stop: asyncio.Event,
                  each: Callable[[], Any] | None = None) -> None:
    while not stop.is_set():
        if each is not None:
            await each()
        screen.show(frame())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), TICK)
