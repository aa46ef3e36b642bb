#!/usr/bin/env python3
"""Check the cards a Studroom player got against each hand's deck commitment (R32).

Standalone: Python 3.9+ standard library only, written from docs/design/fair-dealing.md.

    python3 verify_deck.py MESSAGES.json

MESSAGES.json holds what one player received from a table: a JSON list of
``{"version": N, "event": {...}}`` (the public copies and his private ones; ``version``
is the ``Studroom-Version`` header), or simply a list of events in order. For every
hand it checks that the deck was committed before the first card, and that every card
he can see opens the commitment at the place it was dealt from. Both formats of the
commitment are read: 2 (``AntesCollected.deck_format`` is 2: the leaves are published,
a proof is a place and a salt) and 1 (no ``deck_format``: hands stored before
2026-12-02, a Merkle root, a proof carries its path). Prints one line per hand; exit
code 0 when every hand checks out, 1 when one does not, 2 on unreadable input.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys

RANKS, SUITS = "23456789TJQKA", "cdhs"


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


class Commitment:
    """What a hand's AntesCollected published (section 3 of the design note)."""

    def __init__(self, event: dict) -> None:
        self.root, self.size = event.get("deck_root", ""), event.get("deck_size", 0)
        self.format = event.get("deck_format", 1)
        try:
            self.leaves: bytes | None = base64.b64decode(event.get("deck_leaves", ""), validate=True)
        except (TypeError, ValueError):
            self.leaves = None

    def problem(self) -> str | None:
        """Why it does not hold together, if it does not."""
        if self.leaves is None:
            self.leaves = b""
            return "the leaves are not base64"
        if not self.root:
            return None if not self.size and not self.leaves else "no root, but places or leaves"
        if self.format == 2:
            if len(self.leaves) != 32 * self.size:
                return f"{len(self.leaves) // 32} leaves published for {self.size} places"
            if sha256(b"\x02" + self.leaves).hex() != self.root:
                return "the published leaves do not make the root"
            return None
        if self.format != 1 or self.leaves:
            return f"format {self.format} with {len(self.leaves)} bytes of leaves is not one this verifier knows"
        return None


def proof_opens(commitment: Commitment, card: str, proof: dict) -> bool:
    """Section 3 of the design note: the card and its proof make the published leaf
    (format 2), or lead to the root (format 1)."""
    try:
        place, salt, path = proof["place"], base64.b64decode(proof["salt"]), base64.b64decode(proof["path"])
    except (KeyError, TypeError, ValueError):
        return False
    if not (isinstance(place, int) and 0 <= place < commitment.size and len(salt) == 16):
        return False
    if not (isinstance(card, str) and len(card) == 2 and card[0] in RANKS and card[1] in SUITS):
        return False
    h = sha256(b"\x00" + bytes([place]) + card.encode("ascii") + salt)
    if commitment.format == 2:
        return path == b"" and h == commitment.leaves[32 * place : 32 * place + 32]
    root, size = commitment.root, commitment.size
    index, width, used = place, size, 0
    while width > 1:
        if index % 2 == 1 or index + 1 < width:          # a sibling on this level
            sibling = path[used:used + 32]
            if len(sibling) != 32:
                return False
            h = sha256(b"\x01" + sibling + h) if index % 2 == 1 else sha256(b"\x01" + h + sibling)
            used += 32
        index, width = index // 2, (width + 1) // 2
    return used == len(path) and h.hex() == root


class Hand:
    """One hand, checked as its events come."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.commitment: Commitment | None = None
        self.street = -1
        self.place = 0                 # the next card's place in the committed order
        self.reshuffled = False
        self.opened: dict[int, str] = {}
        self.seats: dict[int, list] = {}   # seat -> his cards in order (None: hidden from us)
        self.proofs = 0
        self.problems: list[str] = []

    def check(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "AntesCollected":
            self.commitment = Commitment(event)
            problem = self.commitment.problem()
            if problem:
                self.problems.append(f"the commitment does not hold together: {problem}")
        elif kind == "CardsDealt":
            self.deal(event)
        elif kind == "LastCardsExposed":
            for seat, card, _up, *proof in event.get("turned", []):
                self.card(card, proof[0] if proof else None, None, f"seat {seat}'s turned card")
        elif kind in ("HandShown", "HandMucked") and event.get("cards"):
            self.shown(event)

    def deal(self, event: dict) -> None:
        street = event["street"]
        where = f"street {street}"
        if self.commitment is None:
            self.problems.append(f"{where} was dealt before the deck was committed")
        if street != self.street + 1:
            self.problems.append(f"{where} came after street {self.street}")
        self.street = street
        self.reshuffled = self.reshuffled or event.get("reshuffled", False)
        place = self.place + (1 if street else 0)          # one burn before every later street
        for k, (seat, card, _up, *proof) in enumerate(event.get("cards", [])):
            self.seats.setdefault(seat, []).append(card)
            self.card(card, proof[0] if proof else None, place + k, f"{where}, seat {seat}")
        if event.get("community") is not None:
            self.card(event["community"], event.get("community_proof"), place, f"{where}, community card")
        self.place = place + len(event.get("cards", [])) + (event.get("community") is not None)

    def shown(self, event: dict) -> None:
        seat, cards, proofs = event["seat"], event["cards"], event.get("proofs", [])
        dealt = self.seats.get(seat, [])
        if len(dealt) != len(cards) or any(d is not None and d != c for d, c in zip(dealt, cards)):
            self.problems.append(f"seat {seat} showed {cards}, but was dealt {dealt}")
        if self.commitment and self.commitment.root and len(proofs) != len(cards):
            self.problems.append(f"seat {seat} showed {len(cards)} cards with {len(proofs)} proofs")
        for card, proof in zip(cards, proofs):
            self.card(card, proof, None, f"seat {seat}'s shown {card}")

    def card(self, card: str | None, proof: dict | None, place: int | None, whose: str) -> None:
        if card is None:
            return
        if self.commitment is None or not self.commitment.root:
            return                                         # a live dealer's physical card
        if proof is None:
            self.problems.append(f"{whose}: {card} came without a proof")
            return
        self.proofs += 1
        if not proof_opens(self.commitment, card, proof):
            self.problems.append(f"{whose}: {card} does not open the commitment at place {proof['place']}")
            return
        if place is not None and not self.reshuffled and proof["place"] != place:
            self.problems.append(f"{whose}: {card} opens place {proof['place']}, but was dealt from place {place}")
        if self.opened.setdefault(proof["place"], card) != card:
            self.problems.append(f"{whose}: place {proof['place']} opened to {self.opened[proof['place']]} before")


def events_of(data) -> list[dict]:
    """One event per version (a private copy shows more than the public one of the same
    event: each card is taken from the copy that shows it)."""
    if data and isinstance(data[0], dict) and "event" in data[0]:
        by_version: dict[int, dict] = {}
        for message in sorted(data, key=lambda m: m["version"]):
            known = by_version.setdefault(message["version"], message["event"])
            if known is not message["event"]:
                by_version[message["version"]] = merge(known, message["event"])
        return [by_version[v] for v in sorted(by_version)]
    return list(data)


def merge(a: dict, b: dict) -> dict:
    if a.get("type") == "CardsDealt":
        return dict(a, cards=[x if x[1] is not None else y for x, y in zip(a["cards"], b["cards"])])
    if a.get("type") == "HandMucked":
        return a if a.get("cards") else b
    return a


def verify(events: list[dict]) -> list[Hand]:
    hands: list[Hand] = []
    for event in events:
        if event.get("type") == "HandStarted":
            hands.append(Hand(event["hand_no"]))
        elif hands:
            hands[-1].check(event)
    return hands


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: verify_deck.py MESSAGES.json", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as source:
            events = events_of(json.load(source))
        hands = verify(events)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        print(f"verify_deck: cannot read {argv[1]}: {e}", file=sys.stderr)
        return 2
    if not hands:
        print(f"verify_deck: no hand in {argv[1]}", file=sys.stderr)
        return 2
    for hand in hands:
        verdict = "ok" if not hand.problems else "NOT OK"
        print(f"hand {hand.number}: {verdict}, {hand.proofs} cards proven")
        for problem in hand.problems:
            print(f"  {problem}")
    return 0 if all(not hand.problems for hand in hands) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
