"""The lobby and one table as text for a terminal (``studroom lobby``, ``studroom
watch``).  Pure: entries and the time in, lines out; English or German (the dealer's
announcements come in both from the table, R30/R31)."""

from __future__ import annotations

from typing import Final

from studroom.domain.games import GAMES
from studroom.services.runtime.text import number, table

from .activity import figures
from .entry import HandPicture, LobbyEntry, Player, Turn
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
        "dealer": "dealer", "no tables": "no tables", "seats": "seats", "live": "live",
        "fold": "folds", "check": "checks", "call": "calls", "bet_": "bets", "raise": "raises to",
        "complete": "completes to", "bring_in": "brings in", "no_ante": "no ante", "left": "left",
        "show": "shows", "muck": "mucks",
    },
    "de": {
        "seat": "Platz", "player": "Spieler", "stack": "Chips", "bet": "Einsatz", "cards": "Karten",
        "hand": "Hand", "pot": "Pot", "street": "Straße", "ante": "Ante", "bring-in": "Bring-in",
        "buy-in": "Buy-in", "to act": "am Zug", "antes": "Antes", "shows or mucks": "zeigt oder wirft weg",
        "folded": "gepasst", "all-in": "all-in", "out": "setzt aus", "leaving": "geht", "wins": "gewinnt",
        "timed out": "Zeit abgelaufen", "waiting": "wartet auf die nächste Hand", "over": "ist vorbei",
        "cancelled": "keine Hand: zu wenige Antes", "dealer": "Geber", "no tables": "keine Tische",
        "seats": "Plätze", "live": "läuft",
        "fold": "passt", "check": "schiebt", "call": "geht mit", "bet_": "setzt", "raise": "erhöht auf",
        "complete": "komplettiert auf", "bring_in": "bringt ein", "no_ante": "ohne Ante", "left": "geht",
        "show": "zeigt", "muck": "wirft weg",
    },
}
LANGUAGES: Final = tuple(WORDS)


# --- the lobby ------------------------------------------------------------------------


LOBBY_HEADER: Final = ("table", "game", "stakes", "buy-in", "seats", "hand", "avg pot", "hands/h", "4th st",
                       "t/o/h", "players")


def lobby_text(entries: list[LobbyEntry], now_ms: int) -> str:
    """The lobby as a text table: a row per table, its seated players in the last column."""
    if not entries:
        return WORDS["en"]["no tables"]
    return table(LOBBY_HEADER, [_lobby_row(entry, now_ms) for entry in sorted(entries, key=lambda e: e.table_id)])


def _lobby_row(entry: LobbyEntry, now_ms: int) -> list[object]:
    f = figures(entry, now_ms)
    return [entry.table_id, GAME_NAMES.get(entry.game, entry.game), stakes_label(entry.stakes),
            f"{number(entry.min_buy_in)}-{number(entry.max_buy_in)}", f"{f.seats_taken}/{f.seats_taken + f.seats_free}",
            f"#{entry.hand_no} {'live' if entry.running else ''}".rstrip(), f.average_pot, f.hands_per_hour,
            None if f.fourth_street_pct is None else f"{f.fourth_street_pct}%", f.timeouts_per_hour,
            "  ".join(_seat_cell(entry, row.seat) for row in entry.players)]


def _seat_cell(entry: LobbyEntry, seat: int) -> str:
    row = next(r for r in entry.players if r.seat == seat)
    marks = "".join(mark for flag, mark in ((row.sitting_out, " (out)"), (row.leaving, " (leaving)")) if flag)
    return f"{row.seat}:{row.player} {number(row.stack)}{marks}"


# --- one table ------------------------------------------------------------------------


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
            rows.append([button, row.seat, row.player, row.stack, None, "", words["out"] if row.sitting_out else ""])
        else:
            rows.append(_player_row(p, button, words))
    header = ["", words["seat"], words["player"], words["stack"], words["bet"], words["cards"], ""]
    return "\n".join([_title(entry, words), table(header, rows), *_footer(entry, now_ms, lang)])


def _title(entry: LobbyEntry, words: dict[str, str]) -> str:
    s = entry.stakes
    parts = [entry.table_id, GAME_NAMES.get(entry.game, entry.game),
             f"{stakes_label(s)} ({words['ante']} {s.ante}, {words['bring-in']} {s.bring_in_amount})"]
    hand = entry.hand
    if hand is not None:
        parts.append(f"{words['hand']} #{hand.hand_no}")
        if hand.street >= 0:
            parts.append(_street_name(entry.game, hand.street, words))
        parts.append(f"{words['pot']} {number(hand.pot)}")
    return " · ".join(parts)


def _street_name(game: str, street: int, words: dict[str, str]) -> str:
    """"4th street" / "4. Straße"."""
    name = GAMES[game].streets[street].name
    return f"{name} {words['street']}" if words is WORDS["en"] else f"{name[:-2]}. {words['street']}"


def _player_row(p: Player, button: str, words: dict[str, str]) -> list[object]:
    cards = " ".join(p.shown) if p.shown else " ".join([DOWN_CARD] * p.down + p.up)
    notes = []
    if p.folded:
        notes.append(words["folded"])
    elif p.all_in:
        notes.append(words["all-in"])
    if p.action and not (p.folded and p.action == "fold"):
        key = "bet_" if p.action == "bet" else p.action
        said = words.get(key, p.action)
        notes.append(f"{said} {number(p.amount)}" if p.amount else said)
    if p.timed_out:
        notes.append(f"({words['timed out']})")
    if p.showed:
        notes.append(p.showed)
    if p.won:
        notes.append(f"{words['wins']} {number(p.won)}")
    return [button, p.seat, p.player, p.stack, p.bet or None, cards, " · ".join(notes)]


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
        lines.append(_turn_line(hand, hand.turn, now_ms, words))
    return lines


def _turn_line(hand: HandPicture, turn: Turn, now_ms: int, words: dict[str, str]) -> str:
    left = max(0, -(-(turn.deadline_ms - now_ms) // 1000))
    if turn.seat is None:
        return f"{words['antes']}: {left} s"
    who = next((p.player for p in hand.players if p.seat == turn.seat), "?")
    what = words["shows or mucks"] if turn.kind == "show" else ", ".join(turn.options)
    return f"{words['to act']}: {words['seat']} {turn.seat} {who} ({what}): {left} s"
