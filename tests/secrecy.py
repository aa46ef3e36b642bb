"""The secrecy check (R23, R32, R33): every event of every public message of a room, and
every private copy as its recipient gets it, scanned for what it must not carry.

A :class:`Leak` is one of:

* ``down_card`` (R23, R33): a face-down card in a message its reader may not see yet:
  in public before it was shown (a ``HandShown`` at the showdown, or turned up by
  R28/R29's ``LastCardsExposed``), in a private copy unless it is the reader's own;
* ``folded_card`` (R23): a card of a hand that was folded or mucked, in any public
  message of that hand or after it (until the next hand starts), or in a private copy
  to anyone but its owner (a mucked hand: but to the showdown's participants);
* either of them also when a card PROOF (R32, ``CardProof`` anywhere in the message)
  opens such a card: what a proof opens is found by trying the cards against the
  hand's commitment (``AntesCollected``);
* ``unshown_proof`` (R32): a proof that opens a card its message does not show (a
  burned or undealt card, or a card the scan did not know to be hidden);
* ``seed`` (R32 as revised: the seed never leaves the store): a hand's seed in any message;
* ``secret_field``: a field its event type declares secret (``__secret__``,
  domain/events.py) that is not blank in a public copy (or in a private one, but a
  mucked hand to the showdown's participants);
* ``unreadable``: a message that is no ``TableEvent`` run with its version: it cannot
  be vouched for.

What is hidden comes from the TRUTH where a test has it (:class:`Truth`: the stored
events, or the private copies, each player's own down cards) and, in any case, from the
copies themselves (a face-down ``DealtCard`` that carries its card).  Messages are read
as the relay writes them (services/wire/event_messages.py: a JSON array of events, the
table's version after the last in ``Studroom-Version``; a one-event object of the first
format too), each event as the domain's ``TableEvent``, and cards are found as whole string values
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
import itertools
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec
from studroom.domain import commitment
from studroom.domain.cards import CARD_TEXT, DECK_SIZE
from studroom.domain.events import (
    Acted,
    AntesCollected,
    CardProof,
    CardsDealt,
    Event,
    HandMucked,
    HandShown,
    HandStarted,
    LastCardsExposed,
    LeaveRequested,
    ShowdownStarted,
    TimedOut,
)
from studroom.services.wire import event_messages, subjects

DOWN_CARD = "down_card"
FOLDED_CARD = "folded_card"
UNSHOWN_PROOF = "unshown_proof"
SEED = "seed"
SECRET_FIELD = "secret_field"
UNREADABLE = "unreadable"

NAME_FIELDS = frozenset({"player", "table_id", "command_id"})     # identities, never cards
MUCKED_FIELDS = frozenset({"cards", "proofs"})                    # a muck's, to the showdown's participants

class Message(NamedTuple):
    """One message of a table's stream: its version (the table's after its last event,
    its ``Studroom-Version`` header; None: not said), body, and for a private copy the
    player it went to (``studroom.priv.<player>.<table>``)."""

    table: str
    version: int | None
    data: bytes
    to: str | None = None


def versioned(last: int, events: Sequence[Event]) -> Iterator[tuple[int, Event]]:
    """A message's events, each with the table's version after it (``last``: after its
    last event, as its header says)."""
    first = event_messages.first_version({event_messages.VERSION_HEADER: str(last)}, len(events))
    return zip(itertools.count(first), events)


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
    events: int = 0                 # in the messages read (one each, a private copy)
    hands: int = 0
    hidden_cards: int = 0           # face-down cards the scan knew and looked for

    def __str__(self) -> str:
        head = (f"{self.messages} messages ({self.events} events), {self.hands} hands, "
                f"{self.hidden_cards} hidden cards")
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
                for version, event in versioned(m.version, event_messages.decode_events(m.data)):
                    self.learn(m.table, version, event)
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


def proofs_in(value: Any) -> Iterator[CardProof]:
    """Every card proof anywhere inside a decoded event."""
    if isinstance(value, CardProof):
        yield value
    elif isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            yield from proofs_in(getattr(value, name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from proofs_in(item)


class _HandSecrets:
    """One hand of one table as the scan goes: what is hidden, shown, folded; who sits
    where and who is at the showdown; the deck commitment its proofs open."""

    def __init__(self, seats: dict[str, int] | None = None) -> None:
        self.hidden: dict[str, int] = {}        # face-down card -> its seat
        self.last: dict[int, str] = {}          # seat -> its last face-down card (R28)
        self.revealed: set[str] = set()
        self.gone: set[int] = set()             # folded or mucked
        self.all_in: set[int] = set()           # a leave does not fold these (domain/table.py _leave)
        self.showdown: set[int] = set()         # the showdown's seats, once it starts
        self.seats = seats or {}                # player -> his seat in this hand
        self.published = commitment.Published("", 0)
        self._opened: dict[tuple[int, bytes, bytes], str | None] = {}

    def deal(self, cards: dict[str, int]) -> None:
        for card, seat in cards.items():
            self.hidden[card] = seat
            self.last[seat] = card

    def follow(self, event: Event) -> None:
        """The public facts of ``event`` that change what may be seen."""
        if isinstance(event, AntesCollected):
            self.published = commitment.Published(event.deck_root, event.deck_size, event.deck_format,
                                                  event.deck_leaves)
        elif isinstance(event, ShowdownStarted):
            self.showdown = set(event.order)
        elif isinstance(event, HandShown) and self.showdown and event.seat not in self.gone:
            self.revealed |= {c for c, s in self.hidden.items() if s == event.seat}
        elif isinstance(event, LastCardsExposed):
            self.revealed |= {d.card for d in event.turned
                              if d.card is not None and d.seat not in self.gone and self.last.get(d.seat) == d.card}
        elif isinstance(event, LeaveRequested):
            if event.seat not in self.all_in and not self.showdown:   # R3: leaving folds a hand that can act
                self.gone.add(event.seat)
        elif _gives_up(event):
            self.gone.add(event.seat)  # type: ignore[attr-defined]
        if getattr(event, "all_in", False):
            self.all_in.add(event.seat)  # type: ignore[attr-defined]

    def at_showdown(self, to: str | None) -> bool:
        return to is not None and self.seats.get(to) in self.showdown

    def may_see(self, to: str | None, event: Event) -> set[str]:
        """The hidden cards a private copy to ``to`` may carry: his own, and a mucked
        hand at a showdown he is in."""
        seat = self.seats.get(to) if to is not None else None
        if seat is None:
            return set()
        own = {c for c, s in self.hidden.items() if s == seat}
        if isinstance(event, HandMucked) and self.at_showdown(to):
            own |= {c for c, s in self.hidden.items() if s == event.seat}
        return own

    def opened(self, proof: CardProof, shown: set[str]) -> str | None:
        """The card ``proof`` opens: tried first among the cards its message shows, then
        all 52 (None: none, it proves nothing)."""
        key = (proof.place, proof.salt, proof.path)
        if key not in self._opened:
            order = [c for c in range(DECK_SIZE) if CARD_TEXT[c] in shown]
            order += [c for c in range(DECK_SIZE) if CARD_TEXT[c] not in shown]
            self._opened[key] = next((CARD_TEXT[c] for c in order if self.published.opens(
                proof.place, c, proof.salt, proof.path)), None)
        return self._opened[key]


def _gives_up(event: Event) -> bool:
    """Does ``event`` fold or muck its seat's hand?"""
    return (isinstance(event, HandMucked)
            or isinstance(event, Acted) and event.action == "fold"
            or isinstance(event, TimedOut) and event.outcome == "fold")


class _TableScan:
    """The scan of one table's messages, in version order (a version's public copy first)."""

    def __init__(self, table: str, truth: Truth, report: Report) -> None:
        self.table, self.truth, self.report = table, truth, report
        self.hand = _HandSecrets()
        self.seeds: set[str] = set()            # every hand's seed so far: never to be seen
        self.version: int = 0                   # the message being scanned
        self.event: Event | None = None
        self.to: str | None = None              # its recipient (None: public)

    def scan(self, version: int, event: Event, to: str | None = None) -> None:
        self.version, self.event, self.to = version, event, to
        if isinstance(event, HandStarted) and to is None:
            self.hand = _HandSecrets({s.player: s.seat for s in event.seats})
            self.report.hands += 1
            seed = self.truth.seeds.get((self.table, version))
            if seed is not None:
                self.seeds.add(seed)
        dealt = dict(self.truth.down.get((self.table, version), {})) if to is None else {}
        if isinstance(event, CardsDealt):
            dealt.update({d.card: d.seat for d in event.cards if not d.up and d.card is not None})
        self.hand.deal(dealt)
        if to is None:
            self.report.hidden_cards += len(dealt)
        mucked_to_participant = isinstance(event, HandMucked) and self.hand.at_showdown(to)
        for name in secret_fields(event):
            if not (mucked_to_participant and name in MUCKED_FIELDS):
                self._leak(SECRET_FIELD, f"{name} = {msgspec.json.encode(getattr(event, name))[:80]!r}")
        if to is None:
            self.hand.follow(event)
        builtins = msgspec.to_builtins(event)
        allowed = self.hand.may_see(to, event)
        shown = set(strings(builtins, NAME_FIELDS))
        self._scan_cards(shown, allowed)
        self._scan_proofs(event, shown, allowed)
        self._scan_seeds(strings(builtins))

    def _hidden(self, card: str, allowed: set[str]) -> str | None:
        """The leak kind if ``card`` may not be in this message, else None."""
        hand = self.hand
        seat = hand.hidden.get(card)
        if seat is None or card in hand.revealed or card in allowed:
            return None
        return FOLDED_CARD if seat in hand.gone else DOWN_CARD

    def _scan_cards(self, texts: Iterable[str], allowed: set[str]) -> None:
        for text in texts:
            kind = self._hidden(text, allowed)
            if kind is not None:
                self._leak(kind, f"seat {self.hand.hidden[text]}'s card {text}")

    def _scan_proofs(self, event: Event, shown: set[str], allowed: set[str]) -> None:
        if not self.hand.published.root:
            return
        for proof in proofs_in(event):
            card = self.hand.opened(proof, shown)
            if card is None:
                continue
            kind = self._hidden(card, allowed)
            if kind is not None:
                self._leak(kind, f"a proof opens seat {self.hand.hidden[card]}'s card {card}")
            elif card not in shown:
                self._leak(UNSHOWN_PROOF, f"a proof opens {card} at place {proof.place}, a card it does not show")

    def _scan_seeds(self, texts: Iterable[str]) -> None:
        for text in texts:
            for seed in self.seeds:
                if seed in text:
                    self._leak(SEED, f"seed {seed[:8]}...")

    def _leak(self, kind: str, what: str) -> None:
        to = "" if self.to is None else f" to {self.to}"
        self.report.leaks.append(Leak(kind, self.table, self.version, type(self.event).__name__ + to, what))


def scan(messages: Iterable[Message], truth: Truth | None = None) -> Report:
    """Every leak in ``messages``: public ones, and private copies (``to`` set) as their
    recipient gets them (the messages of any tables, in any order: each table's are
    scanned in version order)."""
    truth = truth or Truth()
    report = Report()
    by_table: dict[str, list[tuple[int, int, str | None, Event]]] = defaultdict(list)
    for m in dict.fromkeys(messages):                    # a message published twice counts once
        report.messages += 1
        try:
            events = event_messages.decode_events(m.data)
        except msgspec.DecodeError as error:           # a ValidationError too
            report.leaks.append(Leak(UNREADABLE, m.table, m.version, "?", str(error)[:80]))
            continue
        if m.version is None:
            report.leaks.append(Leak(UNREADABLE, m.table, None, ",".join(type(e).__name__ for e in events),
                                     "no version"))
            continue
        report.events += len(events)
        by_table[m.table].extend((version, m.to is not None, m.to, event)
                                 for version, event in versioned(m.version, events))
    for table, events in by_table.items():
        table_scan = _TableScan(table, truth, report)
        for version, _private, to, event in sorted(events, key=lambda e: (e[0], e[1], e[2] or "")):
            table_scan.scan(version, event, to)
    return report


# ------------------------------------------------------------------ a live room's messages


def _received(msg: Any, private: bool = False) -> Message:
    """``studroom.pub.<table>.<mark>`` or ``studroom.priv.<player>.<table>``."""
    version = (msg.headers or {}).get(subjects.VERSION_HEADER)
    *_, player, table = msg.subject.split(".")
    if not private:
        player, table = "", msg.subject.split(".")[2]
    return Message(table, int(version) if version and version.isdigit() else None, bytes(msg.data),
                   player if private else None)


class Watch:
    """The public messages (and, where the connection may read them, the private ones)
    of a room, as a subscriber gets them."""

    def __init__(self) -> None:
        self.public: list[Message] = []
        self.private: list[Message] = []
        self.came: dict[str, set[int]] = defaultdict(set)     # each table's versions come publicly

    async def _on_public(self, msg: Any) -> None:
        message = _received(msg)
        self.public.append(message)
        with contextlib.suppress(msgspec.DecodeError, ValueError):     # unreadable: the scan says so
            self.came[message.table].update(version for version, _ in event_messages.events_of(msg))

    async def _on_private(self, msg: Any) -> None:
        self.private.append(_received(msg, private=True))

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
            while missing := wanted - self.came[table]:
                assert time.monotonic() < deadline, f"{table}: {len(missing)} stored events never came publicly"
                await asyncio.sleep(0.05)
        truth = Truth()
        for table in tables:
            truth.learn_stored(table, load(table))
        return truth

    async def check(self, load: Callable[[str], Sequence[Event]] | None = None, tables: Iterable[str] = (),
                    timeout: float = 30) -> Report:
        """Scan what came, public and private (all of it, with ``load``: the stored
        events of every table seen and of ``tables`` are the truth); fail on any leak,
        and on a scan of no hand at all."""
        truth = await self.complete(load, tables, timeout) if load is not None else Truth()
        report = scan(self.public + self.private, truth.learn_private(list(self.private)))
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
