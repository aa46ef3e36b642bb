"""A hand history as text, the way online rooms write them, in English or German.

It tells a :class:`~.record.HandRecord`: the reader's own down cards and what he may
see (``??`` stands for a card he may not), the dealer's announcements (R30, R31) in
the record's own words, timeouts, returned bets, the showdown, every pot with its rake
and winners, and a summary of each player's result.  Seats are the table's own
numbers (as in the record and the dispute replay).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from studroom.domain.events import (
    Acted,
    Announced,
    AntePosted,
    AnteSkipped,
    CardsDealt,
    ChipsBought,
    Event,
    HandEnded,
    HandMucked,
    HandShown,
    HandStarted,
    LastCardsExposed,
    LeaveRequested,
    PlayerLeft,
    PlayerSatDown,
    PotAwarded,
    RoundEnded,
    ShowdownStarted,
    SitOutChanged,
    TimedOut,
)
from studroom.domain.games import GAMES
from studroom.domain.hand_record import HandRecord

from studroom.domain.hand_names import high_name, low_name

LANGUAGES: Final = ("en", "de")

GAME_NAMES: Final = {"seven_card_stud": "Seven Card Stud", "seven_card_stud_hilo": "Seven Card Stud Hi/Lo",
                     "five_card_stud": "Five Card Stud"}

_WORDS: Final[dict[str, tuple[str, str]]] = {      # key: (English, German)
    "title": ("Studroom hand #{hand} at table {table}: {game} Limit ({small}/{big}{ante}{bring_in}){when}",
              "Studroom Hand #{hand} an Tisch {table}: {game} Limit ({small}/{big}{ante}{bring_in}){when}"),
    "ante_part": (", ante {}",
                  ", Ante {}"),
    "bring_in_part": (", bring-in {}",
                      ", Bring-in {}"),
    "table": ("Table '{table}' {seats} seats, button seat {button}",
              "Tisch '{table}' {seats} Plätze, Button auf Platz {button}"),
    "seat": ("Seat {seat}: {name} ({stack} in chips)",
             "Platz {seat}: {name} ({stack} Chips)"),
    "seen_as": ("(as {name} sees it)",
                "(wie {name} sie sieht)"),
    "full": ("(the dealer's full record)",
             "(die vollständige Aufzeichnung des Gebers)"),
    "ante": ("{name}: posts the ante {amount}",
             "{name}: setzt Ante {amount}"),
    "all_in": (" and is all-in",
               " und ist all-in"),
    "no_ante": ("{name}: sits out this hand (no ante)",
                "{name}: setzt diese Hand aus (kein Ante)"),
    "street": ("*** {street} STREET ***",
               "*** {street} STRASSE ***"),
    "dealt": ("Dealt to {name} {cards}",
              "Karten für {name} {cards}"),
    "community": ("Community card {card}",
                  "Gemeinschaftskarte {card}"),
    "exposed": ("{name}'s last card is turned up {card}",
                "Die letzte Karte von {name} wird aufgedeckt {card}"),
    "skip": ("The last cards can no longer be told apart: no more betting",
             "Die letzten Karten sind nicht mehr zuzuordnen: keine weitere Setzrunde"),
    "dealer": ("Dealer: {name} - {said}",
               "Geber: {name} - {said}"),
    "bring_in": ("{name}: brings in for {amount}",
                 "{name}: bringt ein mit {amount}"),
    "complete": ("{name}: completes to {to}",
                 "{name}: ergänzt auf {to}"),
    "fold": ("{name}: folds",
             "{name}: passt"),
    "check": ("{name}: checks",
              "{name}: checkt"),
    "call": ("{name}: calls {amount}",
             "{name}: geht mit {amount}"),
    "bet": ("{name}: bets {amount}",
            "{name}: setzt {amount}"),
    "raise": ("{name}: raises to {to}",
              "{name}: erhöht auf {to}"),
    "timeout": ("{name}: time is up",
                "{name}: Zeit abgelaufen"),
    "protected": ("{name}: time is up; stays in for the chips already in (R19)",
                  "{name}: Zeit abgelaufen; bleibt mit den gesetzten Chips im Spiel (R19)"),
    "returned": ("Uncalled bet ({amount}) returned to {name}",
                 "Nicht gedeckter Einsatz ({amount}) geht zurück an {name}"),
    "showdown": ("*** SHOW DOWN ***",
                 "*** SHOWDOWN ***"),
    "shows": ("{name}: shows {cards} ({what})",
              "{name}: zeigt {cards} ({what})"),
    "mucks": ("{name}: mucks hand",
              "{name}: wirft die Karten weg"),
    "mucks_cards": ("{name}: mucks hand {cards}",
                    "{name}: wirft die Karten weg {cards}"),
    "pot": ("{name} collected {amount} from {pot}{half}",
            "{name} gewinnt {amount} aus dem {pot}{half}"),
    "main": ("main pot",
             "Hauptpot"),
    "side": ("side pot {n}",
             "Nebenpot {n}"),
    "high": (" (high)",
             " (High)"),
    "low": (" (low)",
            " (Low)"),
    "raked": ("Rake {rake} from {pot}",
              "Rake {rake} aus dem {pot}"),
    "summary": ("*** SUMMARY ***",
                "*** ZUSAMMENFASSUNG ***"),
    "total": ("Total pot {pot} | Rake {rake}",
              "Gesamtpot {pot} | Rake {rake}"),
    "result": ("Seat {seat}: {name} {net:+d} ({start} -> {end})",
               "Platz {seat}: {name} {net:+d} ({start} -> {end})"),
    "leaves": ("{name} leaves the table with {amount}",
               "{name} verlässt den Tisch mit {amount}"),
    "leaving": ("{name} leaves the table (his hand is folded)",
                "{name} verlässt den Tisch (seine Hand ist gepasst)"),
    "sits_down": ("{name} sits down in seat {seat}",
                  "{name} setzt sich auf Platz {seat}"),
    "buys_in": ("{name} buys in {amount}",
                "{name} kauft {amount} Chips"),
    "sits_out": ("{name} sits out",
                 "{name} setzt aus"),
    "sits_in": ("{name} is back",
                "{name} ist zurück"),
    "low_and_high": ("{high}; {low}",
                     "{high}; {low}"),
}


def street_name(game: str, street: int, lang: str) -> str:
    """``3rd`` / ``3.`` ... for the game's street index."""
    name = GAMES[game].streets[street].name
    return name if lang == "en" else name.rstrip("ndrth") + "."


def render(record: HandRecord, lang: str = "en") -> str:
    """The hand history of ``record`` in ``lang`` (``en`` or ``de``)."""
    if lang not in LANGUAGES:
        raise ValueError(f"no language {lang!r}; languages: {', '.join(LANGUAGES)}")
    return "\n".join(_Teller(record, lang).lines()) + "\n"


class _Teller:
    def __init__(self, record: HandRecord, lang: str) -> None:
        self.record = record
        self.words = {key: texts[LANGUAGES.index(lang)] for key, texts in _WORDS.items()}
        self.lang = lang
        self.names = dict(record.seated)
        self.cards: dict[int, list[str | None]] = {}
        self.community: list[str] = []
        self.total_pot = 0
        self.out: list[str] = []

    def say(self, key: str, **values: Any) -> None:
        self.out.append(self.words[key].format(**values))

    def name(self, seat: int) -> str:
        return self.names.get(seat, f"seat {seat}")

    def lines(self) -> list[str]:
        for event in self.record.events:
            tell = _TELLERS.get(type(event))
            if tell is not None:
                tell(self, event)
        return self.out

    # --- the hand ---------------------------------------------------------------------

    def started(self, e: HandStarted) -> None:
        r, w = self.record, self.words
        stakes = r.config.stakes
        when = "" if r.started_ms is None else " - " + datetime.fromtimestamp(
            r.started_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        self.say("title", hand=e.hand_no, table=r.table_id, game=GAME_NAMES[r.config.game], small=stakes.small_bet,
                 big=stakes.big_bet, ante=w["ante_part"].format(stakes.ante) if stakes.ante else "",
                 bring_in=w["bring_in_part"].format(stakes.bring_in_amount), when=when)
        self.say("table", table=r.table_id, seats=r.config.seats, button=e.button)
        for s in e.seats:
            self.names[s.seat] = s.player
            self.say("seat", seat=s.seat, name=s.player, stack=s.stack)
        if r.full:
            self.out.append(w["full"])
        elif r.viewer is not None:
            self.out.append(w["seen_as"].format(name=self.name(r.viewer)))

    def ante(self, e: AntePosted) -> None:
        self.say("ante", name=self.name(e.seat), amount=e.amount)
        if e.all_in:
            self.out[-1] += self.words["all_in"]

    def no_ante(self, e: AnteSkipped) -> None:
        self.say("no_ante", name=self.name(e.seat))

    def dealt(self, e: CardsDealt) -> None:
        self.say("street", street=street_name(self.record.config.game, e.street, self.lang))
        if e.community is not None:
            self.community.append(e.community)
            self.say("community", card=f"[{e.community}]")
        new: dict[int, list[str | None]] = {}
        for d in e.cards:
            new.setdefault(d.seat, []).append(d.card)
        for seat, cards in new.items():
            before = self.cards.setdefault(seat, [])
            shown = f"[{_cards(before)}] [{_cards(cards)}]" if before else f"[{_cards(cards)}]"
            self.say("dealt", name=self.name(seat), cards=shown)
            before.extend(cards)

    def exposed(self, e: LastCardsExposed) -> None:
        for d in e.turned:
            if d.card is not None and self.cards.get(d.seat):
                self.cards[d.seat][-1] = d.card
            self.say("exposed", name=self.name(d.seat), card=f"[{d.card}]")
        if e.skip_betting:
            self.say("skip")

    def announced(self, e: Announced) -> None:
        said = e.en if self.lang == "en" else e.de
        if said:
            self.say("dealer", name=self.name(e.seat), said=said)

    def acted(self, e: Acted) -> None:
        self.say(e.action, name=self.name(e.seat), amount=e.amount, to=e.to)
        if e.all_in:
            self.out[-1] += self.words["all_in"]

    def timed_out(self, e: TimedOut) -> None:
        self.say("protected" if e.outcome == "protected" else "timeout", name=self.name(e.seat))

    def round_ended(self, e: RoundEnded) -> None:
        if e.returned and e.returned_seat is not None:
            self.say("returned", name=self.name(e.returned_seat), amount=e.returned)

    def showdown(self, e: ShowdownStarted) -> None:
        self.say("showdown")

    def shown(self, e: HandShown) -> None:
        self.cards[e.seat] = list(e.cards)
        cards = e.cards + self.community
        high = high_name(cards, self.lang)
        low = low_name(cards, self.lang) if GAMES[self.record.config.game].hi_lo else None
        what = high if low is None else self.words["low_and_high"].format(high=high, low=low)
        self.say("shows", name=self.name(e.seat), cards=f"[{' '.join(e.cards)}]", what=what)

    def mucked(self, e: HandMucked) -> None:
        if e.cards:
            self.say("mucks_cards", name=self.name(e.seat), cards=f"[{' '.join(e.cards)}]")
        else:
            self.say("mucks", name=self.name(e.seat))

    def pot(self, e: PotAwarded) -> None:
        w = self.words
        pot = w["main"] if e.pot == 0 else w["side"].format(n=e.pot)
        self.total_pot += e.amount
        if e.rake:
            self.say("raked", rake=e.rake, pot=pot)
        hi_lo = bool(e.low)
        for share, half in ((e.high, "high"), (e.low, "low")):
            for seat, chips in sorted(share.items()):
                self.say("pot", name=self.name(seat), amount=chips, pot=pot, half=w[half] if hi_lo else "")

    def ended(self, e: HandEnded) -> None:
        started = self.record.events[0]
        assert isinstance(started, HandStarted)
        stacks = {s.seat: s.stack for s in started.seats}
        self.say("summary")
        self.say("total", pot=self.total_pot, rake=e.rake)
        for seat, stack in sorted(e.stacks.items()):
            self.say("result", seat=seat, name=self.name(seat), net=e.net[seat], start=stacks[seat], end=stack)

    # --- the table around the hand ----------------------------------------------------

    def sat_down(self, e: PlayerSatDown) -> None:
        self.names[e.seat] = e.player
        self.say("sits_down", name=e.player, seat=e.seat)

    def bought(self, e: ChipsBought) -> None:
        self.say("buys_in", name=self.name(e.seat), amount=e.amount)

    def sit_out(self, e: SitOutChanged) -> None:
        self.say("sits_out" if e.sitting_out else "sits_in", name=self.name(e.seat))

    def leaving(self, e: LeaveRequested) -> None:
        self.say("leaving", name=self.name(e.seat))

    def left(self, e: PlayerLeft) -> None:
        self.say("leaves", name=e.player, amount=e.cashed_out)


def _cards(cards: list[str | None]) -> str:
    return " ".join(card or "??" for card in cards)


_TELLERS: Final[dict[type[Event], Callable[[_Teller, Any], None]]] = {
    HandStarted: _Teller.started, AntePosted: _Teller.ante, AnteSkipped: _Teller.no_ante, CardsDealt: _Teller.dealt,
    LastCardsExposed: _Teller.exposed, Announced: _Teller.announced, Acted: _Teller.acted,
    TimedOut: _Teller.timed_out, RoundEnded: _Teller.round_ended, ShowdownStarted: _Teller.showdown,
    HandShown: _Teller.shown, HandMucked: _Teller.mucked, PotAwarded: _Teller.pot, HandEnded: _Teller.ended,
    PlayerSatDown: _Teller.sat_down, ChipsBought: _Teller.bought, SitOutChanged: _Teller.sit_out,
    LeaveRequested: _Teller.leaving, PlayerLeft: _Teller.left,
}
