"""The lobby and one table as text for a terminal (``studroom lobby``, ``studroom
watch``).  Pure: entries and the time in, lines out; English or German (the dealer's
announcements come in both from the table, R30/R31)."""

from __future__ import annotations

from typing import Final

from studroom.domain.config import Stakes
from studroom.domain.games import GAMES
from studroom.services.runtime.text import number, table

from .entry import CLOSED, OPEN, HandPicture, LobbyEntry, Player, Turn
from .queries import stakes_label

DOWN_CARD: Final = "##"

GAME_NAMES: Final = {"seven_card_stud": "Seven Card Stud", "seven_card_stud_hilo": "Seven Card Stud Hi/Lo",
                     "five_card_stud": "Five Card Stud"}

WORDS: Final = {
    "en": {
        "seat": "seat", "player": "player", "stack": "stack", "bet": "bet", "cards": "cards", "hand": "hand",
        "pot": "pot", "street": "street", "ante": "ante", "bring-in": "bring-in", "buy-in": "buy-in",
        "to act": "to act", "antes": "antes", "shows or mucks": "shows or mucks", "folded": "folded",
        "all-in": "all-in", "out": "sitting out", "leaving": "leaving", "wins": "wins", "timed out": "timed out",
        "waiting": "waiting for the next hand", "over": "is over", "cancelled": "no hand: too few antes",
        "dealer": "dealer", "no tables": "no tables", "next hand": "from the next hand",
        "fold": "folds", "check": "checks", "call": "calls", "bet_": "bets", "raise": "raises to",
        "complete": "completes to", "bring_in": "brings in", "no_ante": "no ante", "left": "left",
        "show": "shows", "muck": "mucks",
        "playing": "playing", "idle": "waiting", "stopped": "stopped", "paused": "paused",
        "closing": "closing", "closed": "closed",
    },
    "de": {
        "seat": "Platz", "player": "Spieler", "stack": "Chips", "bet": "Einsatz", "cards": "Karten",
        "hand": "Hand", "pot": "Pot", "street": "Straße", "ante": "Ante", "bring-in": "Bring-in",
        "buy-in": "Buy-in", "to act": "am Zug", "antes": "Antes", "shows or mucks": "zeigt oder wirft weg",
        "folded": "gepasst", "all-in": "all-in", "out": "setzt aus", "leaving": "geht", "wins": "gewinnt",
        "timed out": "Zeit abgelaufen", "waiting": "wartet auf die nächste Hand", "over": "ist vorbei",
        "cancelled": "keine Hand: zu wenige Antes", "dealer": "Geber", "no tables": "keine Tische",
        "next hand": "ab der nächsten Hand",
        "fold": "passt", "check": "checkt", "call": "geht mit", "bet_": "setzt", "raise": "erhöht auf",
        "complete": "ergänzt auf", "bring_in": "bringt ein", "no_ante": "ohne Ante", "left": "geht",
        "show": "zeigt", "muck": "wirft weg",
        "playing": "spielt", "idle": "wartet", "stopped": "gestoppt", "paused": "pausiert",
        "closing": "schließt", "closed": "geschlossen",
    },
}
# The options of a turn (TurnStarted.options), as the player would choose them.
OPTIONS: Final = {
    "en": {"bring_in": "bring-in"},
    "de": {"fold": "passen", "check": "checken", "call": "mitgehen", "bet": "setzen", "raise": "erhöhen",
           "complete": "ergänzen", "bring_in": "einbringen"},
}
LANGUAGES: Final = tuple(WORDS)


# --- the lobby ------------------------------------------------------------------------


LOBBY_HEADER: Final = ("table", "game", "stakes", "buy-in", "seats", "hand", "state", "avg pot", "hands/h",
                       "4th st", "t/o/h", "waiting", "players")


def lobby_text(entries: list[LobbyEntry]) -> str:
    """The lobby as a text table: a row per table, its seated players in the last column.
    The figures are the entries' own (the lobby's answer computes them; rendering never
    does, since a list answer carries no buckets to compute them from)."""
    if not entries:
        return WORDS["en"]["no tables"]
    rows = [_lobby_row(entry) for entry in sorted(entries, key=lambda e: e.table_id)]
    return table(LOBBY_HEADER, rows, right={"stakes", "buy-in", "seats", "4th st"})


def _lobby_row(entry: LobbyEntry) -> list[object]:
    f = entry.figures
    return [entry.table_id, GAME_NAMES.get(entry.game, entry.game), stakes_label(entry.stakes),
            f"{number(entry.min_buy_in)}-{number(entry.max_buy_in)}", f"{f.seats_taken}/{f.seats_taken + f.seats_free}",
            f"#{entry.hand_no}", state_text(entry, WORDS["en"]), f.average_pot, f.hands_per_hour,
            None if f.fourth_street_pct is None else f"{f.fourth_street_pct}%", f.timeouts_per_hour,
            entry.waiting,
            "  ".join(_seat_cell(entry, row.seat) for row in entry.players)]


def state_text(entry: LobbyEntry, words: dict[str, str]) -> str:
    """Whether the table deals: stopped (no table service holds it: ``served``), what the
    operators made of it (paused, closing, closed), else playing a hand or waiting."""
    said = [] if entry.served or entry.state == CLOSED else [words["stopped"]]
    if entry.state != OPEN:
        said.append(words[entry.state])
    elif entry.served:
        said.append(words["playing"] if entry.running else words["idle"])
    return ", ".join(said)


def _seat_cell(entry: LobbyEntry, seat: int) -> str:
    row = next(r for r in entry.players if r.seat == seat)
    marks = "".join(mark for flag, mark in ((row.sitting_out, " (out)"), (row.leaving, " (leaving)")) if flag)
    return f"{row.seat}:{row.player} {number(row.stack)}{marks}"


# --- one table ------------------------------------------------------------------------


def chips(value: int, lang: str) -> str:
    """Chips as the language writes them: 1,085 or 1.085."""
    return number(value) if lang == "en" else number(value).replace(",", ".")


def table_text(entry: LobbyEntry, now_ms: int, lang: str = "en") -> str:
    """One table as a spectator sees it: seats, stacks, up cards, pot, whose turn with
    its countdown, the dealer's announcements (``lang``: one of LANGUAGES)."""
    words = WORDS[lang]
    hand = entry.hand
    in_hand = {p.seat: p for p in hand.players} if hand is not None else {}
    rows: list[list[object]] = []
    for row in entry.players:
        p = in_hand.get(row.seat)
        button = "D" if hand is not None and hand.button == row.seat else ""
        if p is None:
            notes = [words[key] for flag, key in ((row.sitting_out, "out"), (row.leaving, "leaving")) if flag]
            rows.append([button, row.seat, row.player, chips(row.stack, lang), None, "", " · ".join(notes)])
        else:
            rows.append(_player_row(p, button, lang))
    header = ["", words["seat"], words["player"], words["stack"], words["bet"], words["cards"], ""]
    return "\n".join([_title(entry, lang), table(header, rows, right={words["stack"], words["bet"]}),
                      *_footer(entry, now_ms, lang)])


def _title(entry: LobbyEntry, lang: str) -> str:
    words = WORDS[lang]
    parts = [entry.table_id, GAME_NAMES.get(entry.game, entry.game), _stakes(entry.stakes, lang),
             state_text(entry, words)]
    if entry.configured is not None:
        parts.append(f"{words['next hand']}: {_stakes(entry.configured.stakes, lang)}")
    hand = entry.hand
    if hand is not None:
        parts.append(f"{words['hand']} #{hand.hand_no}")
        if hand.street >= 0:
            parts.append(_street_name(entry.game, hand.street, words))
        parts.append(f"{words['pot']} {chips(hand.pot, lang)}")
    return " · ".join(parts)


def _stakes(s: Stakes, lang: str) -> str:
    words = WORDS[lang]
    return (f"{chips(s.small_bet, lang)}/{chips(s.big_bet, lang)} ({words['ante']} {chips(s.ante, lang)}, "
            f"{words['bring-in']} {chips(s.bring_in_amount, lang)})")


def _street_name(game: str, street: int, words: dict[str, str]) -> str:
    """"4th street" / "4. Straße"."""
    name = GAMES[game].streets[street].name
    return f"{name} {words['street']}" if words is WORDS["en"] else f"{name[:-2]}. {words['street']}"


def _player_row(p: Player, button: str, lang: str) -> list[object]:
    words = WORDS[lang]
    cards = " ".join(p.shown) if p.shown else " ".join([DOWN_CARD] * p.down + p.up)
    notes = []
    if p.folded:
        notes.append(words["folded"])
    elif p.all_in:
        notes.append(words["all-in"])
    if p.action and not (p.folded and p.action == "fold"):
        key = "bet_" if p.action == "bet" else p.action
        said = words.get(key, p.action)
        notes.append(f"{said} {chips(p.amount, lang)}" if p.amount else said)
    if p.timed_out:
        notes.append(f"({words['timed out']})")
    showed = p.showed_de if lang == "de" else p.showed
    if showed:
        notes.append(showed)
    if p.won:
        notes.append(f"{words['wins']} {chips(p.won, lang)}")
    return [button, p.seat, p.player, chips(p.stack, lang), chips(p.bet, lang) if p.bet else None, cards,
            " · ".join(notes)]


def _footer(entry: LobbyEntry, now_ms: int, lang: str) -> list[str]:
    """The dealer's announcements, then whose turn it is, or what became of the hand."""
    words, hand = WORDS[lang], entry.hand
    lines = []
    if hand is not None:
        said = [(p.player, p.said_de if lang == "de" else p.said_en) for p in hand.players if not p.folded]
        if any(text for _, text in said):
            lines.append(f"{words['dealer']}: " + "; ".join(f"{who}: {text}" for who, text in said if text))
    if hand is not None and hand.over:
        lines.append(words["cancelled"] if hand.cancelled else f"{words['hand']} #{hand.hand_no} {words['over']}")
    if hand is None or hand.over:
        lines.append(words["waiting"])
    elif hand.turn is not None:
        lines.append(_turn_line(hand, hand.turn, now_ms, lang))
    return lines


def _turn_line(hand: HandPicture, turn: Turn, now_ms: int, lang: str) -> str:
    words = WORDS[lang]
    left = max(0, -(-(turn.deadline_ms - now_ms) // 1000))
    if turn.seat is None:
        return f"{words['antes']}: {left} s"
    who = next((p.player for p in hand.players if p.seat == turn.seat), "?")
    options = ", ".join(OPTIONS[lang].get(option, option) for option in turn.options)
    what = words["shows or mucks"] if turn.kind == "show" else options
    return f"{words['to act']}: {words['seat']} {turn.seat} {who} ({what}): {left} s"
