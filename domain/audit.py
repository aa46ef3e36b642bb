"""Checking the cards of a table's hands (rule R32 in docs/rules.md), for disputes and
for players.

:func:`audit` takes any stream of one table's events (a whole table, a few hands, a
player's messages merged by :func:`merged`) and checks each hand in it:

* its order: the deck committed (``AntesCollected``) before the first card, streets
  dealt one after the other; what was published holds together (format 2: the leaves
  hash to the root; an unknown format is named);
* every proof present: each card it came with opens the commitment at the place the
  real order of dealing puts it (after an R17 reshuffle: at a place not dealt before),
  and no place opens to two cards;
* with the dealer's record (the stored ``HandStarted`` holds the seed, or the scripted
  deck): the seed matches its published hash, the deck derived from it (and the
  players' entropy) matches the commitment, and every card dealt, burned, shown or
  mucked is the deck's card at its place.

A finding names the hand, the street, the seat, the card and the place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from . import commitment
from .cards import BadCard, parse, show, show_many
from .deck import CommittedDeck, scripted_key, seed_hash
from .events import (
    AntePosted, AntesCollected, CardProof, CardsDealt, DealtCard, Event, HandMucked, HandShown, HandStarted,
    LastCardsExposed, TableEvent,
)


class HandAudit(msgspec.Struct, frozen=True):
    hand_no: int
    fair: bool
    findings: list[str]
    proofs: int                   # cards whose proof was checked against the commitment
    cards: int                    # cards checked against the deck derived from the seed


def hands(events: Iterable[Event]) -> list[list[Event]]:
    """The stream cut into hands, each from its HandStarted (what comes before the
    first one belongs to no hand here)."""
    cut: list[list[Event]] = []
    for event in events:
        if isinstance(event, HandStarted):
            cut.append([])
        if cut:
            cut[-1].append(event)
    return cut


def audit(events: Iterable[Event]) -> list[HandAudit]:
    """Each hand of a table's stream, checked."""
    return [audit_hand(hand) for hand in hands(events)]


def audit_hand(events: Sequence[Event]) -> HandAudit:
    """One hand, from its HandStarted on."""
    return _HandCheck(events).run()


class Copy(msgspec.Struct, frozen=True):
    """One message a player got: an event's public or private copy and its version (the
    ``Studroom-Version`` header)."""

    version: int
    event: TableEvent


def stream(data: object) -> list[Event]:
    """A table's events from decoded JSON: a list of events (stored, or a public
    stream), a ``hand play`` output (``{"events": [...]}``), or a player's messages
    (a list of :class:`Copy`, merged).  ValueError if it is none of them."""
    raw = data.get("events") if isinstance(data, dict) else data
    first = raw[0] if isinstance(raw, list) and raw else None
    try:
        if isinstance(first, dict) and "version" in first and "event" in first:
            copies = msgspec.json.decode(msgspec.json.encode(raw), type=list[Copy])
            return merged((c.version, c.event) for c in copies)
        return list(msgspec.json.decode(msgspec.json.encode(raw), type=list[TableEvent]))
    except (TypeError, msgspec.ValidationError) as e:
        raise ValueError(str(e)) from None


def merged(copies: Iterable[tuple[int, Event]]) -> list[Event]:
    """One event per version from the copies a player got (public and private copies
    of the same event): each card as the copy that shows it, in version order."""
    by_version: dict[int, Event] = {}
    for version, event in copies:
        known = by_version.get(version)
        by_version[version] = event if known is None else _merge(known, event)
    return [by_version[v] for v in sorted(by_version)]


def _merge(a: Event, b: Event) -> Event:
    if isinstance(a, CardsDealt) and isinstance(b, CardsDealt) and len(a.cards) == len(b.cards):
        return msgspec.structs.replace(a, cards=[x if x.card is not None else y for x, y in zip(a.cards, b.cards)])
    if isinstance(a, HandMucked) and isinstance(b, HandMucked):
        return a if a.cards else b
    return a


class _HandCheck:
    """The checks of one hand, event by event."""

    def __init__(self, events: Sequence[Event]) -> None:
        started = events[0]
        assert isinstance(started, HandStarted)
        self.events, self.started = events, started
        self.findings: list[str] = []
        self.published = commitment.Published("", 0)
        self.committed = False
        self.street = -1
        self.pos = 0                              # the next card's place, until a reshuffle
        self.reshuffled = False
        self.opened: dict[int, str] = {}          # place -> the card its proof opened
        self.dealt: dict[int, list[str | None]] = {}   # seat -> his cards as seen (None: hidden)
        self.proofs = self.cards = 0
        self.deck = self._dealers_deck()
        self.source: list[int] = []               # the derived cards dealt from (R17: the stub)
        self.at = 0
        self.burns: list[int] = []

    def run(self) -> HandAudit:
        for event in self.events[1:]:
            if isinstance(event, HandStarted):
                self._find("a second HandStarted inside the hand")
            elif isinstance(event, AntePosted) and event.entropy is not None and self.deck is not None:
                self._mix(event.entropy)
            elif isinstance(event, AntesCollected):
                self._commitment(event)
            elif isinstance(event, CardsDealt):
                self._street(event)
            elif isinstance(event, LastCardsExposed):
                for d in event.turned:
                    self._proven(d.card, d.proof, f"seat {d.seat}'s turned card", None)
            elif isinstance(event, (HandShown, HandMucked)):
                self._hand_shown(event)
        return HandAudit(self.started.hand_no, not self.findings, self.findings, self.proofs, self.cards)

    def _find(self, what: str) -> None:
        self.findings.append(f"hand {self.started.hand_no}: {what}")

    # --- the dealer's record -----------------------------------------------------------

    def _dealers_deck(self) -> CommittedDeck | None:
        """The deck made again from the stored seed or scripted deck (None: a public or a
        player's copy, or a live dealer's hand)."""
        s = self.started
        try:
            seed = bytes.fromhex(s.seed) if s.seed is not None else None
            listed = [parse(card) for card in s.deck] if s.deck else None
        except (ValueError, BadCard) as e:
            self._find(f"the stored seed or deck is unreadable ({e})")
            return None
        if listed is not None:
            seed = seed if seed is not None else scripted_key(s.deck)
        if seed is None:
            return None
        if seed_hash(seed) != s.commitment:
            self._find("the seed does not match the hash published when the hand started")
        return CommittedDeck(seed, listed)

    def _mix(self, entropy: str) -> None:
        assert self.deck is not None
        if self.committed:
            self._find("a player's entropy came after the deck was committed")
            return
        try:
            self.deck.mix(bytes.fromhex(entropy))
        except ValueError:
            self._find(f"unreadable entropy {entropy[:20]!r}")

    def _commitment(self, event: AntesCollected) -> None:
        if self.committed:
            self._find("the deck was committed twice")
        self.committed = True
        self.published = published = commitment.Published(event.deck_root, event.deck_size, event.deck_format,
                                                          event.deck_leaves)
        if event.deck_format not in commitment.FORMATS:
            self._find(f"the deck was committed in format {event.deck_format}, which no one knows")
        elif not published.sound:
            self._find(f"the published leaves do not make the deck's root (format {event.deck_format})")
        deck = self.deck
        if deck is not None:
            deck.fix(event.deck_format, event.deck_size)
            if (deck.root(), deck.span(), deck.leaves()) != (event.deck_root, event.deck_size, event.deck_leaves):
                self._find("the deck derived from the seed is not the one committed to")
            self.source = deck.order()

    # --- cards -------------------------------------------------------------------------

    def _street(self, e: CardsDealt) -> None:
        if not self.committed:
            self._find(f"street {e.street} was dealt before the deck was committed")
        if e.street != self.street + 1:
            self._find(f"street {e.street} was dealt after street {self.street}")
        self.street = e.street
        where = f"street {e.street}"
        if e.reshuffled:
            self.reshuffled = True
            self._reshuffle(e)
        burn = 1 if e.street else 0               # R9: one burn before every later street
        place = self.pos + burn
        derived = self._derive(burn + len(e.cards) + (e.community is not None))
        if derived is not None and e.burned and e.burned != show_many(derived[:burn]):
            self._find(f"{where}: burned {e.burned}, the deck says {show_many(derived[:burn])}")
        for k, d in enumerate(e.cards):
            self._dealt_card(d, where, place + k, None if derived is None else derived[burn + k])
        if e.community is not None:
            self._proven(e.community, e.community_proof, f"{where}: the community card", place)
            self._compare(e.community, None if derived is None else derived[-1], f"{where}: the community card")
        self.pos += burn + len(e.cards) + (e.community is not None)

    def _dealt_card(self, d: DealtCard, where: str, place: int, derived: int | None) -> None:
        whose = f"{where}: seat {d.seat}"
        self.dealt.setdefault(d.seat, []).append(d.card)
        if d.card is None:
            if d.proof is not None:
                self._find(f"{whose}: a proof came with a hidden card")
            return
        self._proven(d.card, d.proof, whose, place)
        self._compare(d.card, derived, whose)

    def _hand_shown(self, e: HandShown | HandMucked) -> None:
        whose = f"seat {e.seat} {'showed' if isinstance(e, HandShown) else 'mucked'}"
        if not e.cards:
            return                                 # a public copy of a muck
        seen = self.dealt.get(e.seat, [])
        if len(e.cards) != len(seen) or any(a is not None and a != b for a, b in zip(seen, e.cards)):
            self._find(f"{whose} {e.cards}, but was dealt {['?' if c is None else c for c in seen]}")
        if self.published.root and len(e.proofs) != len(e.cards):
            self._find(f"{whose} {len(e.cards)} cards with {len(e.proofs)} proofs")
        for card, proof in zip(e.cards, e.proofs):
            self._proven(card, proof, f"{whose} {card}", None)

    def _proven(self, card: str | None, proof: CardProof | None, whose: str, place: int | None) -> None:
        """Does the proof open ``card`` at ``place`` (None: any place not opened to
        another card)?"""
        if card is None:
            return
        if proof is None:
            if self.published.root:
                self._find(f"{whose}: {card} came without its proof")
            return
        self.proofs += 1
        try:
            value = parse(card)
        except BadCard:
            self._find(f"{whose}: {card!r} is not a card")
            return
        if not self.published.opens(proof.place, value, proof.salt, proof.path):
            self._find(f"{whose}: {card} does not open the commitment at place {proof.place}")
            return
        if place is not None and not self.reshuffled and proof.place != place:
            self._find(f"{whose}: {card} is proven at place {proof.place}, but dealt from place {place}")
        opened = self.opened.setdefault(proof.place, card)
        if opened != card:
            self._find(f"{whose}: place {proof.place} opened to {opened} before, now to {card}")

    # --- the deck made again from the seed ---------------------------------------------

    def _derive(self, count: int) -> list[int] | None:
        if self.deck is None or not self.source:
            return None
        cards = self.source[self.at : self.at + count]
        self.at += count
        if len(cards) < count:
            self._find(f"street {self.street}: the deck ran out")
            return None
        self.burns += cards[:1] if self.street else []
        return cards

    def _reshuffle(self, e: CardsDealt) -> None:
        """R17: the stub and the burns, shuffled with the deck's key."""
        if self.deck is None or not self.source:
            return
        self.source = self.deck.reshuffled(self.source[self.at :] + self.burns, e.street)
        self.at, self.burns = 0, []
        if e.stub and e.stub != show_many(self.source):
            self._find(f"street {e.street}: the reshuffled stub is not the one the seed makes")

    def _compare(self, card: str, derived: int | None, whose: str) -> None:
        if derived is None:
            return
        self.cards += 1
        if card != show(derived):
            self._find(f"{whose} got {card}, the deck says {show(derived)}")
