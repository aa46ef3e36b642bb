"""The lobby and one table as text (``studroom lobby``, ``studroom watch``), without
servers: what a spectator reads, in English and German (R30, R31: the dealer's
announcements in both)."""

from __future__ import annotations

from lobby_tables import T0, entry_of, played
from studroom.domain import views
from studroom.domain.commands import (
    Act,
    BuyIn,
    OpenTable,
    PostAnte,
    SitDown,
    StartHand,
    Timeout,
)
from studroom.domain.config import TableConfig
from studroom.domain.deck import SEED_BYTES
from studroom.domain.events import Event
from studroom.domain.simulate import STAKES, new_table
from studroom.domain.table import Table
from studroom.projections.lobby.activity import figures
from studroom.projections.lobby.entry import LobbyEntry
from studroom.projections.lobby.rendering import (
    DOWN_CARD,
    LOBBY_HEADER,
    lobby_text,
    table_text,
)
from studroom.projections.lobby.watching import Follower


def mid_hand(street: int) -> list[Event]:
    """Five players of seven card stud who check or call (the bring-in brings in), until
    the hand's ``street`` (0: 3rd street) waits on a player."""
    table, events = new_table("seven_card_stud", 5)
    events += table.execute(StartHand(seed=bytes(range(SEED_BYTES)).hex()))     # antes posted for them
    while table.hand is not None and (table.hand.street < street or table.hand.turn_kind != "act"):
        turn = table.last_turn
        assert turn is not None and turn.seat is not None
        action = next(a for a in ("check", "call", "bring_in") if a in turn.options)
        events += table.execute(Act(seat=turn.seat, action=action))
    assert table.hand is not None
    return events


def test_one_table_as_a_spectator_sees_it_with_the_turn_s_countdown() -> None:
    events = mid_hand(street=1)
    entry = entry_of(events)
    assert entry.hand is not None and entry.hand.turn is not None
    deadline = entry.hand.turn.deadline_ms
    text = table_text(entry, deadline - 3_400)
    title, header, *rows = text.splitlines()
    assert title.startswith("t · Seven Card Stud · 20/40 (ante 5, bring-in 10) · hand #1 · ")
    assert f"pot {entry.hand.pot:,}" in title and "street" in title
    assert header.split()[:3] == ["seat", "player", "stack"]
    for p in entry.hand.players:
        row = next(r for r in rows if f" {p.player} " in r)
        assert row.count(DOWN_CARD) == p.down and all(card in row for card in p.up)
    whose = entry.hand.turn.seat
    assert rows[-1].startswith(f"to act: seat {whose} p{whose} (") and rows[-1].endswith(": 4 s")
    assert table_text(entry, deadline + 5_000).endswith(": 0 s")


def test_the_dealer_speaks_english_or_german_and_the_labels_follow() -> None:
    events = mid_hand(street=3)
    entry = entry_of(events)
    assert entry.hand is not None
    said = [p for p in entry.hand.players if p.said_en]
    assert said, "four up cards each: somebody shows something"
    english, german = table_text(entry, T0, "en"), table_text(entry, T0, "de")
    assert "6th street" in english and "6. Straße" in german and "Platz" in german and "Spieler" in german
    assert f"dealer: {said[0].player}: {said[0].said_en}" in english
    assert f"Geber: {said[0].player}: {said[0].said_de}" in german


def test_a_finished_hand_and_a_cancelled_one_say_so() -> None:
    ended = entry_of(played(hands=1))
    assert table_text(ended, T0).splitlines()[-2:] == ["hand #1 is over", "waiting for the next hand"]
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    for seat in (0, 1):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}", auto_ante=False))
        events += table.execute(BuyIn(seat=seat, amount=1_000))
    events += table.execute(StartHand(seed=bytes(SEED_BYTES).hex()))
    events += table.execute(PostAnte(seat=0))
    assert table.last_turn is not None
    events += table.execute(Timeout(turn=table.last_turn.turn))        # R5: one ante only
    cancelled = table_text(entry_of(events), T0, "de")
    assert cancelled.splitlines()[-2:] == ["keine Hand: zu wenige Antes", "wartet auf die nächste Hand"]


def test_the_lobby_as_a_text_table() -> None:
    entries: list[LobbyEntry] = []
    for i, game in enumerate(("five_card_stud", "seven_card_stud")):
        entry = entry_of(played(game, players=3, hands=2, seed=i))
        entry.table_id = f"t{i}"
        entries.append(entry)
    text = lobby_text(entries, T0 + 10 * 60_000)
    lines = text.splitlines()
    assert lines[0].split()[:3] == list(LOBBY_HEADER[:3]) and lines[0].endswith("players")
    assert set(lines[1]) == {"─"}
    t0 = next(line for line in lines if line.startswith("t0 "))
    assert "Five Card Stud" in t0 and "20/40" in t0 and "200-4,000" in t0 and " 3/10 " in t0 and " #2 " in t0
    assert f" {figures(entries[0], T0 + 10 * 60_000).hands_per_hour} " in t0
    assert t0.endswith("2:p2 2,300") and "  0:p0 1,900  1:p1 " in t0
    assert lobby_text([], T0) == "no tables"


def test_a_follower_applies_each_event_once_in_order_from_the_lobby_s_entry() -> None:
    events = played(hands=1)
    public = [views.public(e) for e in events]
    follower = Follower()
    follower.offer(31, public[30], T0)                         # before any entry: kept
    follower.start(entry_of(events[:20]))
    assert follower.entry is not None and follower.entry.version == 20 and follower.behind_since is not None
    for version in range(21, 31):
        follower.offer(version, public[version - 1], T0)
    follower.offer(25, public[24], T0)                         # a copy: ignored
    assert follower.entry.version == 31 and follower.behind_since is None
    follower.start(entry_of(events[:10]))                      # an older answer: ignored
    for version in range(32, len(events) + 1):
        follower.offer(version, public[version - 1], T0)
    done = entry_of(events)
    assert (follower.entry.version, follower.entry.players, follower.entry.hands) == \
        (done.version, done.players, done.hands)
