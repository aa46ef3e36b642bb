"""What a browser received, held against the truth (the stored events with their
down cards; tests/secrecy.py): no card the viewer may not see, on the wire or on the
page.

* The events pushed on the WebSocket (``{"push": "event"}``) are scanned with the
  secrecy check as the relay's messages are (tests/secrecy.py ``scan``: down cards,
  folded cards, proofs, seeds, secret fields), a private copy as its recipient's;
  a spectator gets no private copy at all.  The stored events' public copies of the
  versions the page did not get are scanned with them, so that the scan knows every
  hand's down cards even when the page came in mid-hand.
* Every other JSON it received (answers, lobby pushes, HTTP bodies) holds tables as
  lobby entries or table views (``table_id`` and ``hand.hand_no``): none may carry a
  down card of that hand the viewer may not see and that was never shown in it.
* Every other response is one of the console's own static files, byte for byte (no
  table data is put into the page's assets).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
from playwright.sync_api import Page, Response, WebSocket
from secrecy import NAME_FIELDS, Message, Report, Truth, scan, strings
from studroom.domain import views
from studroom.domain.events import CardsDealt, Event, HandMucked, HandShown, HandStarted, LastCardsExposed

STATIC = Path(__file__).resolve().parents[4] / "services" / "console" / "static"


class Traffic:
    """Every WebSocket frame a page received and every HTTP response, from now on."""

    def __init__(self, page: Page) -> None:
        self.frames: list[str] = []
        self.sent: list[str] = []
        self.responses: list[Response] = []
        self.recording = True
        self.static = _static_files()           # as they were when the page loaded (others edit them meanwhile)
        page.on("websocket", self._socket)
        page.on("response", lambda response: self.recording and self.responses.append(response))

    def _socket(self, socket: WebSocket) -> None:
        socket.on("framereceived", lambda payload: self.recording and self.frames.append(_text(payload)))
        socket.on("framesent", lambda payload: self.recording and self.sent.append(_text(payload)))

    def stop(self) -> None:
        """Keep what came so far (the check then holds it against events stored since)."""
        self.recording = False

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(frame) for frame in self.frames]

    def events(self) -> list[dict[str, Any]]:
        return [m for m in self.messages() if m.get("push") == "event"]

    def bodies(self) -> Iterator[tuple[Response, bytes]]:
        for response in self.responses:
            if response.status not in (101, 204, 304):     # a socket's upgrade; no body
                yield response, response.body()


def _static_files() -> dict[str, bytes]:
    return {str(path.relative_to(STATIC)): path.read_bytes() for path in STATIC.rglob("*") if path.is_file()}


def _text(payload: str | bytes) -> str:
    return payload if isinstance(payload, str) else payload.decode()


def down_by_hand(events: list[Event], *, shown: bool = True, to: str | None = None) -> dict[int, dict[str, str]]:
    """For each hand: its down cards (card -> owner); without ``shown``, only those never
    shown in it (HandShown, LastCardsExposed) nor to ``to`` (a hand mucked at a showdown
    he took part in, R23)."""
    out: dict[int, dict[str, str]] = {}
    hand_no, players = 0, {}
    for event in events:
        if isinstance(event, HandStarted):
            hand_no, players = event.hand_no, {s.seat: s.player for s in event.seats}
            out[hand_no] = {}
        elif isinstance(event, CardsDealt) and hand_no:
            out[hand_no].update({d.card: players.get(d.seat, "") for d in event.cards
                                 if not d.up and d.card is not None})
        elif isinstance(event, HandShown) and hand_no and not shown:
            for card in event.cards:
                out[hand_no].pop(card, None)
        elif isinstance(event, LastCardsExposed) and hand_no and not shown:
            for d in event.turned:
                out[hand_no].pop(d.card or "", None)
        elif isinstance(event, HandMucked) and hand_no and not shown and to is not None \
                and to in {players.get(seat) for seat in event.participants}:
            for card in event.cards:
                out[hand_no].pop(card, None)
    return out


def hidden_by_hand(events: list[Event], to: str | None = None) -> dict[int, dict[str, str]]:
    """For each hand: its down cards never shown in it, nor to ``to`` (card -> owner)."""
    return down_by_hand(events, shown=False, to=to)


def _tables_in(value: Any) -> Iterator[tuple[str, int, Any]]:
    """Every lobby entry or table view inside a JSON value: (table, hand_no, it)."""
    if isinstance(value, dict):
        hand = value.get("hand")
        if isinstance(value.get("table_id"), str) and isinstance(hand, dict) and isinstance(hand.get("hand_no"), int):
            yield value["table_id"], hand["hand_no"], value
            return
        for item in value.values():
            yield from _tables_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _tables_in(item)


class Verdict:
    """What the check looked at (a clean check of nothing proves nothing)."""

    def __init__(self) -> None:
        self.report = Report()
        self.tables_checked = 0          # lobby entries and views outside the events
        self.static_files = 0
        self.leaks: list[str] = []

    def __str__(self) -> str:
        return (f"{self.report}; {self.tables_checked} table pictures, {self.static_files} static files"
                + "".join(f"\n{leak}" for leak in self.leaks))


def check(traffic: Traffic, stored: dict[str, list[Event]], viewer: str | None) -> Verdict:
    """Everything ``traffic`` holds against the stored events of ``stored``'s tables
    (``viewer``: the player whose page it is, None for a spectator)."""
    verdict = Verdict()
    messages: list[Message] = []
    seen: dict[str, set[int]] = defaultdict(set)
    for push in traffic.events():
        private = bool(push.get("private"))
        if private and viewer is None:
            verdict.leaks.append(f"a private copy to a spectator: {push}")
        messages.append(Message(push["table"], push["version"], json.dumps(push["event"]).encode(),
                                viewer if private else None))
        if not private:
            seen[push["table"]].add(push["version"])
    for table, events in stored.items():
        messages += [Message(table, version, msgspec.json.encode(views.public(event)))
                     for version, event in enumerate(events, start=1) if version not in seen[table]]
    truth = Truth()
    for table, events in stored.items():
        truth.learn_stored(table, events)
    verdict.report = scan(messages, truth)
    hidden = {table: hidden_by_hand(events, viewer) for table, events in stored.items()}
    others = [m for m in traffic.messages() if m.get("push") != "event"]
    for response, body in traffic.bodies():
        if "json" in (response.headers.get("content-type") or ""):
            others.append(json.loads(body))
        else:
            _check_static(response, body, verdict, traffic.static)
    for value in others:
        for table, hand_no, picture in _tables_in(value):
            verdict.tables_checked += 1
            secret = {card: owner for card, owner in hidden.get(table, {}).get(hand_no, {}).items() if owner != viewer}
            for text in strings(picture, NAME_FIELDS):
                if text in secret:
                    verdict.leaks.append(f"{table} hand {hand_no}: {secret[text]}'s down card {text} in {value}"[:400])
    return verdict


def _check_static(response: Response, body: bytes, verdict: Verdict, loaded: dict[str, bytes]) -> None:
    path = response.url.split("://", 1)[-1].split("/", 1)[-1].split("?", 1)[0]
    name = "index.html" if path in ("", "index.html") else path.removeprefix("static/")
    own = STATIC / name
    if body == loaded.get(name) or own.is_file() and own.read_bytes() == body:
        verdict.static_files += 1
    else:
        verdict.leaks.append(f"a response that is no static file of the console: {response.url} "
                             f"({response.status}, {len(body)} bytes)")
