"""Text hand histories as players know them from online rooms, in English and German:
the reader's own cards, ``??`` for what he may not see (R23), the dealer's
announcements (R30), every action, pot and result."""

from __future__ import annotations

import random

from studroom.domain.commands import Act, BuyIn, OpenTable, SitDown, StartHand
from studroom.domain.config import TableConfig
from studroom.domain.events import Announced, Event
from studroom.domain.simulate import STAKES, new_table, play_hand
from studroom.domain.table import Table
from studroom.domain.hand_names import high_name, low_name
from studroom.domain.hands import find, spans
from studroom.domain.hand_record import record_from_stream
from studroom.projections.history.text import render

START_MS = 1_764_601_200_000          # 2025-12-01 15:00:00 UTC
CHECK_RAISE_DECK = ["Kc", "8h", "5c", "Kd", "8s", "5h", "Tc", "4d", "Jh", "2c", "9c", "6d", "2s", "2d", "3h", "7s",
                    "Qc"]
# tests/scenarios/R13_check_raise.json: cy (seat 2) is dealt first, then ann, then bob
CHECK_RAISE = [(0, "bring_in"), (1, "call"), (2, "call"), (1, "check"), (2, "bet"), (0, "call"), (1, "raise"),
               (2, "call"), (0, "call"), (1, "bet"), (2, "fold"), (0, "fold")]


def _check_raise_hand() -> list[Event]:
    table = Table()
    events = table.execute(OpenTable(table_id="t1", config=TableConfig(game="seven_card_stud", stakes=STAKES, seats=6)))
    for seat, name in enumerate(("ann", "bob", "cy")):
        events += table.execute(SitDown(seat=seat, player=name))
        events += table.execute(BuyIn(seat=seat, amount=1000))
    events += table.execute(StartHand(deck=CHECK_RAISE_DECK, button=1, now_ms=START_MS))
    for i, (seat, action) in enumerate(CHECK_RAISE):
        events += table.execute(Act(seat=seat, action=action, now_ms=START_MS + 1000 * (i + 1)))
    return events


def test_R23_the_text_history_as_ann_sees_it_in_english() -> None:
    events = _check_raise_hand()
    text = render(record_from_stream(events, find(events, 1), "ann"), "en")
    lines = text.splitlines()
    assert lines[0] == ("Studroom hand #1 at table t1: Seven Card Stud Limit (20/40, ante 5, bring-in 10) "
                        "- 2025-12-01 15:00:00 UTC")
    for line in ("Table 't1' 6 seats, button seat 1", "Seat 2: cy (1000 in chips)", "(as ann sees it)",
                 "ann: posts the ante 5", "*** 3rd STREET ***", "Dealt to ann [8h 8s 4d]", "Dealt to bob [?? ?? Jh]",
                 "Dealt to cy [?? ?? Tc]", "ann: brings in for 10", "bob: calls 10", "*** 4th STREET ***",
                 "Dealt to ann [8h 8s 4d] [6d]", "bob: checks", "cy: bets 20", "bob: raises to 40",
                 "*** 5th STREET ***", "bob: bets 40", "cy: folds", "ann: folds",
                 "Uncalled bet (40) returned to bob", "bob collected 165 from main pot", "*** SUMMARY ***",
                 "Total pot 165 | Rake 0", "Seat 0: ann -55 (1000 -> 945)", "Seat 1: bob +110 (1000 -> 1110)"):
        assert line in lines, line
    assert "Kc" not in text and "Kd" not in text and "5c" not in text      # cy's and bob's down cards


def test_the_text_history_in_german() -> None:
    events = _check_raise_hand()
    text = render(record_from_stream(events, find(events, 1), "bob"), "de")
    lines = text.splitlines()
    assert lines[0].startswith("Studroom Hand #1 an Tisch t1: Seven Card Stud Limit (20/40, Ante 5, Bring-in 10)")
    for line in ("Platz 1: bob (1000 Chips)", "(wie bob sie sieht)", "bob: setzt Ante 5", "*** 3. STRASSE ***",
                 "Karten für bob [5c 5h Jh]", "Karten für ann [?? ?? 4d]", "ann: bringt ein mit 10",
                 "bob: geht mit 10", "bob: checkt", "cy: setzt 20", "bob: erhöht auf 40", "cy: passt",
                 "Nicht gedeckter Einsatz (40) geht zurück an bob", "bob gewinnt 165 aus dem Hauptpot",
                 "*** ZUSAMMENFASSUNG ***", "Gesamtpot 165 | Rake 0", "Platz 1: bob +110 (1000 -> 1110)"):
        assert line in lines, line


def test_R30_the_dealers_announcements_in_both_languages() -> None:
    rng = random.Random(2)
    table, events = new_table("seven_card_stud", 6)
    for _ in range(30):
        events += play_hand(table, rng)
    said = [(e, span) for span in spans(events) if span.end for e in events[span.start:span.end]
            if isinstance(e, Announced)]
    assert said
    announced, span = said[0]
    record = record_from_stream(events, span, None)
    assert announced.en in render(record, "en") and announced.de in render(record, "de")


def test_made_hands_are_named_in_both_languages() -> None:
    cards = ["Ah", "Ad", "Kc", "Ks", "Kd", "2c", "3h"]
    assert high_name(cards, "en") == "full house, kings full of aces"
    assert high_name(cards, "de") == "Full House, Könige über Asse"
    assert high_name(["Ah", "Kh", "Qh", "Jh", "Th", "2c", "3d"], "de") == "Royal Flush"
    assert high_name(["9s", "9h", "4c", "4d", "Ks", "2c", "3d"], "de") == "Zwei Paare, Neuner und Vierer"
    assert low_name(["Ah", "2d", "3c", "4s", "8h", "Kc", "Kd"], "de") == "Low 8-4-3-2-A"
    assert low_name(["Ah", "2d", "3c", "4s", "8h", "Kc", "Kd"], "en") == "8-4-3-2-A low"
    assert low_name(["9h", "Td", "3c", "4s", "8h", "Kc", "Kd"], "en") is None
