"""The secrecy check (R23, R32, R33): every public message of a room, scanned for what
it must not carry.

A :class:`Leak` is one of:

* ``down_card`` (R23, R33): a face-down card in a public message before it was shown
  (a ``HandShown`` at the showdown, or turned up by R28/R29's ``LastCardsExposed``);
* ``folded_card`` (R23): a card of a hand that was folded or mucked, in any public
  message of that hand or after it (until the next hand starts);
* ``early_seed`` (R32 as implemented: the hand's last event, ``HandEnded``, reveals
  the seed, and a scripted hand's deck): a hand's seed in a public message before that;
* ``secret_field``: a field its event type declares secret (``__secret__``,
  domain/events.py) that is not blank in a public copy;
* ``unreadable``: a public message that is no ``TableEvent`` with its version: it
  cannot be vouched for.

What is hidden comes from the TRUTH where a test has it (:class:`Truth`: the stored
events, or the private copies, each player's own down cards) and, in any case, from the
public copies themselves (a face-down ``DealtCard`` that carries its card).  Messages
are decoded as the domain's ``TableEvent`` and cards are found as whole string values
of the decoded event, never by searching bytes: a card text like ``"As"`` is in a lot
of things that are not cards.  Identities (``player``, ``table_id``, ``command_id``)
are names, not cards; a seed is looked for inside every string.

In an integration test::

    async with watching(spectator_nc) as watch:
        ... play hands ...
        await watch.check(store.load)      # waits for every stored event publicly, then scans
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec
from studroom.domain.events import (
    Acted,
    CardsDealt,
    Event,
    HandCancelled,
    HandEnded,
    HandMucked,
    HandShown,
    HandStarted,
    LastCardsExposed,
    LeaveRequested,
    ShowdownStarted,
    TableEvent,
    TimedOut,
)
from studroom.services.wire import subjects

DOWN_CARD = "down_card"
FOLDED_CARD = "folded_card"
EARLY_SEED = "early_seed"
SECRET_FIELD = "secret_field"
UNREADABLE = "unreadable"

NAME_FIELDS = frozenset({"player", "table_id", "command_id"})     # identities, never cards
R32_REVEAL = {HandEnded: frozenset({"seed", "deck"})}             # the hand's last event reveals its deck

_decode = msgspec.json.Decoder(TableEvent).decode


class Message(NamedTuple):
    """One message of a table's stream: its version (None: not said) and body."""

    table: str
    version: int | None
    data: bytes


@dataclass(frozen=True)
class Leak:
    kind: str
    table: str
    version: int | None
    event: str
    what: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.table} v{self.version} {self.event}: {self.what}"


@dataclass
class Report:
    """What a scan found, and how much it looked at (a clean scan of nothing proves nothing)."""

    leaks: list[Leak] = field(default_factory=list)
    messages: int = 0
    hands: int = 0
    hidden_cards: int = 0           # face-down cards the scan knew and looked for

    def __str__(self) -> str:
        head = f"{self.messages} public messages, {self.hands} hands, {self.hidden_cards} hidden cards"
        return "\n".join([f"{head}: {len(self.leaks)} leaks", *map(str, self.leaks)])


class Truth:
    """What the dealer knows: the face-down cards dealt (seat by card) and the seeds,
    by table and version."""

    def __init__(self) -> None:
        self.down: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
        self.seeds: dict[tuple[str, int], str] = {}

    def learn(self, table: str, version: int, event: Event) -> None:
        if isinstance(event, CardsDealt):
            for d in event.cards:
                if not d.up and d.card is not None:
                    self.down[(table, version)][d.card] = d.seat
        elif isinstance(event, HandStarted) and event.seed:
            self.seeds[(table, version)] = event.seed

    def learn_stored(self, table: str, events: Sequence[Event]) -> Truth:
        """A table's stored events (version ``i + 1`` at index ``i``)."""
        for version, event in enumerate(events, start=1):
            self.learn(table, version, event)
        return self

    def learn_private(self, messages: Iterable[Message]) -> Truth:
        """Private copies (``studroom.priv.<player>.<table>``): their owners' down cards."""
        for m in messages:
            if m.version is not None:
                self.learn(m.table, m.version, _decode(m.data))
        return self


def secret_fields(event: Event) -> Iterator[str]:
    """The fields of ``event`` its type declares secret that are not blank."""
    cls = type(event)
    if not cls.__secret__:
        return
    for f in msgspec.inspect.type_info(cls).fields:  # type: ignore[attr-defined]
        if f.name in cls.__secret__:
            blank = f.default_factory() if f.default is msgspec.NODEFAULT else f.default
            if getattr(event, f.name) != blank:
                yield f.name


def strings(value: Any, skip: frozenset[str] = frozenset()) -> Iterator[str]:
    """Every string value in a decoded event (``msgspec.to_builtins``), but under the
    keys in ``skip``."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in skip:
                yield from strings(item, skip)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item, skip)


class _HandSecrets:
    """One hand of one table as the scan goes: what is hidden, shown, folded."""

    def __init__(self) -> None:
        self.hidden: dict[str, int] = {}        # face-down card -> its seat
        self.last: dict[int, str] = {}          # seat -> its last face-down card (R28)
        self.revealed: set[str] = set()
        self.gone: set[int] = set()             # folded or mucked
        self.showdown = False

    def deal(self, cards: dict[str, int]) -> None:
        for card, seat in cards.items():
            self.hidden[card] = seat
            self.last[seat] = card

    def follow(self, event: Event) -> None:
        """The public facts of ``event`` that change what may be seen."""
        if isinstance(event, ShowdownStarted):
            self.showdown = True
        elif isinstance(event, HandShown) and self.showdown and event.seat not in self.gone:
            self.revealed |= {c for c, s in self.hidden.items() if s == event.seat}
        elif isinstance(event, LastCardsExposed):
            self.revealed |= {d.card for d in event.turned
                              if d.card is not None and d.seat not in self.gone and self.last.get(d.seat) == d.card}
        elif _gives_up(event):
            self.gone.add(event.seat)  # type: ignore[attr-defined]


def _gives_up(event: Event) -> bool:
    """Does ``event`` fold or muck its seat's hand?"""
    return (isinstance(event, (LeaveRequested, HandMucked))
            or isinstance(event, Acted) and event.action == "fold"
            or isinstance(event, TimedOut) and event.outcome == "fold")


class _TableScan:
    """The scan of one table's public messages, in version order."""

    def __init__(self, table: str, truth: Truth, report: Report) -> None:
        self.table, self.truth, self.report = table, truth, report
        self.hand = _HandSecrets()
        self.seed: str | None = None            # the hand in play's, until its last event
        self.unrevealed: set[str] = set()       # seeds never revealed (cancelled hands too)
        self.version: int = 0                   # the message being scanned
        self.event: Event | None = None

    def scan(self, version: int, event: Event) -> None:
        self.version, self.event = version, event
        if isinstance(event, HandStarted):
            self.hand = _HandSecrets()
            self.report.hands += 1
            self.seed = self.truth.seeds.get((self.table, version))
            if self.seed is not None:
                self.unrevealed.add(self.seed)
        dealt = dict(self.truth.down.get((self.table, version), {}))
        if isinstance(event, CardsDealt):
            dealt.update({d.card: d.seat for d in event.cards if not d.up and d.card is not None})
        self.hand.deal(dealt)
        self.report.hidden_cards += len(dealt)
        for name in secret_fields(event):
            self._leak(SECRET_FIELD, f"{name} = {msgspec.json.encode(getattr(event, name))[:80]!r}")
        self.hand.follow(event)
        builtins = msgspec.to_builtins(event)
        self._scan_cards(strings(builtins, NAME_FIELDS | R32_REVEAL.get(type(event), frozenset())))
        self._scan_seeds(strings(builtins, R32_REVEAL.get(type(event), frozenset())))
        if isinstance(event, HandEnded) and self.seed is not None:
            self.unrevealed.discard(self.seed)
        if isinstance(event, (HandEnded, HandCancelled)):
            self.seed = None

    def _scan_cards(self, texts: Iterable[str]) -> None:
        hand = self.hand
        for text in texts:
            seat = hand.hidden.get(text)
            if seat is not None and text not in hand.revealed:
                kind = FOLDED_CARD if seat in hand.gone else DOWN_CARD
                self._leak(kind, f"seat {seat}'s card {text}")

    def _scan_seeds(self, texts: Iterable[str]) -> None:
        for text in texts:
            for seed in self.unrevealed:
                if seed in text:
                    self._leak(EARLY_SEED, f"seed {seed[:8]}... before its hand ended")

    def _leak(self, kind: str, what: str) -> None:
        self.report.leaks.append(Leak(kind, self.table, self.version, type(self.event).__name__, what))


def scan(public: Iterable[Message], truth: Truth | None = None) -> Report:
    """Every leak in ``public`` (the messages of any tables, in any order: each table's
    are scanned in version order)."""
    truth = truth or Truth()
    report = Report()
    by_table: dict[str, list[tuple[int, Event]]] = defaultdict(list)
    for m in dict.fromkeys(public):                      # a message published twice counts once
        report.messages += 1
        try:
            event = _decode(m.data)
        except msgspec.DecodeError as error:
            report.leaks.append(Leak(UNREADABLE, m.table, m.version, "?", str(error)[:80]))
            continue
        if m.version is None:
            report.leaks.append(Leak(UNREADABLE, m.table, None, type(event).__name__, "no version"))
            continue
        by_table[m.table].append((m.version, event))
    for table, events in by_table.items():
        table_scan = _TableScan(table, truth, report)
        for version, event in sorted(events, key=lambda ve: ve[0]):
            table_scan.scan(version, event)
    return report


# ------------------------------------------------------------------ a live room's messages


def _received(msg: Any) -> Message:
    version = (msg.headers or {}).get("Studroom-Version")
    return Message(msg.subject.rsplit(".", 1)[-1], int(version) if version and version.isdigit() else None,
                   bytes(msg.data))


class Watch:
    """The public messages (and, where the connection may read them, the private ones)
    of a room, as a subscriber gets them."""

    def __init__(self) -> None:
        self.public: list[Message] = []
        self.private: list[Message] = []

    async def _on_public(self, msg: Any) -> None:
        self.public.append(_received(msg))

    async def _on_private(self, msg: Any) -> None:
        self.private.append(_received(msg))

    def tables(self) -> list[str]:
        return sorted({m.table for m in self.public})

    async def complete(self, load: Callable[[str], Sequence[Event]], tables: Iterable[str] = (),
                       timeout: float = 30) -> Truth:
        """Wait until every stored event of each table seen (and of ``tables``) has come
        publicly, so that every one is scanned; then the stored events, as the truth."""
        deadline = time.monotonic() + timeout
        tables = sorted(set(tables) | set(self.tables()))
        for table in tables:
            wanted = set(range(1, len(load(table)) + 1))
            while missing := wanted - {m.version for m in self.public if m.table == table}:
                assert time.monotonic() < deadline, f"{table}: {len(missing)} stored events never came publicly"
                await asyncio.sleep(0.05)
        truth = Truth()
        for table in tables:
            truth.learn_stored(table, load(table))
        return truth

    async def check(self, load: Callable[[str], Sequence[Event]] | None = None, tables: Iterable[str] = (),
                    timeout: float = 30) -> Report:
        """Scan what came (all of it, with ``load``: the stored events of every table
        seen and of ``tables`` are the truth); fail on any leak, and on a scan of no
        hand at all."""
        truth = await self.complete(load, tables, timeout) if load is not None else Truth()
        report = scan(list(self.public), truth.learn_private(list(self.private)))
        assert not report.leaks, str(report)
        assert report.hands, f"the secrecy watch saw no hand: {report}"
        return report


@contextlib.asynccontextmanager
async def watching(nc: Any, *, private: bool = False) -> AsyncIterator[Watch]:
    """Watch the room on ``nc`` (a spectator's connection on a secure server; with
    ``private``, one that may also read every private subject: a service's, or any on
    an open server) from now until the block ends."""
    watch = Watch()
    subscriptions = [await nc.subscribe(subjects.all_public_events(), cb=watch._on_public)]
    if private:
        subscriptions.append(await nc.subscribe(subjects.all_private_events(), cb=watch._on_private))
    await nc.flush()
    try:
        yield watch
    finally:
        for subscription in subscriptions:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
