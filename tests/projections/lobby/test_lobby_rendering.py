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
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.deck import SEED_BYTES
from studroom.domain.events import (
    Event,
    HandShown,
    HandStarted,
    SitOutChanged,
    TableClosed,
    TableClosing,
    TableConfigured,
    TablePaused,
    TableResumed,
)
from studroom.domain.simulate import STAKES, new_table
from studroom.domain.table import Table
from studroom.projections.lobby.activity import figures
from studroom.projections.lobby.entry import LobbyEntry
from studroom.projections.lobby.queries import LobbyQuery, select, stakes_label
from studroom.projections.lobby.rendering import (
    DOWN_CARD,
    LOBBY_HEADER,
    WORDS,
    lobby_text,
    state_text,
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
    assert title.startswith("t · Seven Card Stud · 20/40 (ante 5, bring-in 10) · playing · hand #1 · ")
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


def test_watch_in_german_is_wholly_german_numbers_options_and_the_shown_hands() -> None:
    """Issue 18: `watch --lang de` printed "Pot 1,085" and "(fold, call, raise)"."""
    entry = entry_of(mid_hand(street=1))
    assert entry.hand is not None and entry.hand.turn is not None
    entry.hand.pot, entry.hand.players[0].stack = 1_085, 12_345
    german = table_text(entry, T0, "de")
    assert "Pot 1.085" in german and "12.345" in german and "1,085" not in german and "12,345" not in german
    options = {"fold": "passen", "call": "mitgehen", "raise": "erhöhen", "complete": "ergänzen", "check": "checken",
               "bet": "setzen", "bring_in": "einbringen"}
    turn_line = german.splitlines()[-1]
    assert turn_line.startswith("am Zug: Platz ")
    assert turn_line.split("(")[1].split(")")[0] == ", ".join(options[o] for o in entry.hand.turn.options)
    assert "pot 1,085" in table_text(entry, T0, "en")
    hands = (played(hands=1, seed=seed, timeouts=0.0) for seed in range(40))
    shown = entry_of(next(events for events in hands if any(isinstance(e, HandShown) for e in events)))
    assert shown.hand is not None
    showed = [p for p in shown.hand.players if p.showed]
    assert showed and all(p.showed_de and p.showed_de != p.showed for p in showed)
    english, german = table_text(shown, T0, "en"), table_text(shown, T0, "de")
    assert all(p.showed in english and p.showed_de in german and p.showed not in german for p in showed)


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


def two_tables() -> list[LobbyEntry]:
    entries: list[LobbyEntry] = []
    for i, game in enumerate(("five_card_stud", "seven_card_stud")):
        entry = entry_of(played(game, players=3, hands=2, seed=i, timeouts=0.0))
        entry.table_id = f"t{i}"
        entries.append(entry)
    return entries


def test_the_lobby_as_a_text_table() -> None:
    entries = two_tables()
    now = T0 + 10 * 60_000
    text = lobby_text(select(entries, LobbyQuery(), now))
    lines = text.splitlines()
    assert lines[0].split()[:3] == list(LOBBY_HEADER[:3]) and lines[0].endswith("players")
    assert set(lines[1]) == {"─"}
    t0 = next(line for line in lines if line.startswith("t0 "))
    assert "Five Card Stud" in t0 and "20/40" in t0 and "200-4,000" in t0 and " 3/10 " in t0 and " #2 " in t0
    assert " waiting " in t0
    assert all(f"{row.seat}:{row.player} {row.stack:,}" in t0 for row in entries[0].players)
    assert lobby_text([]) == "no tables"


def test_the_figures_of_a_list_answer_are_printed_though_it_carries_no_buckets() -> None:
    """Issue 18: the list answer leaves the hour's buckets out; the text used to compute
    the figures again from them, and printed "-" and 0 on every plain `studroom lobby`."""
    entries = two_tables()
    now = T0 + 10 * 60_000
    listed = select(entries, LobbyQuery(), now)
    assert all(e.activity == [] for e in listed)
    for entry in entries:
        f = figures(entry, now)
        assert f.hands_per_hour == 2 and f.average_pot is not None and f.fourth_street_pct is not None
        row = next(line for line in lobby_text(listed).splitlines() if line.startswith(entry.table_id + " "))
        assert [f"{f.average_pot:,}", "2", f"{f.fourth_street_pct}%", str(f.timeouts_per_hour)] == \
            row.split()[9:13]


def test_a_stopped_room_s_tables_say_stopped_with_the_figures_of_their_last_hour() -> None:
    entries = two_tables()
    day_later = T0 + 24 * 3_600_000
    listed = select(entries, LobbyQuery(), day_later, served=lambda table_id: False)
    assert [e.figures for e in listed] == [figures(e, e.updated_ms) for e in entries]
    assert [e.figures for e in select(entries, LobbyQuery(), day_later)][0].hands_per_hour == 0
    for row in lobby_text(listed).splitlines()[2:]:
        assert row.split()[8:9] == ["stopped"] and row.split()[10] == "2"


def test_a_table_s_state_from_the_operators_events() -> None:
    events = played(hands=1)
    paused = entry_of([*events, TablePaused()])
    assert " · paused · " in table_text(paused, T0) and " pausiert " in table_text(paused, T0, "de")
    assert state_text(entry_of([*events, TablePaused(), TableResumed()]), WORDS["en"]) == "waiting"
    closing = entry_of([*events[:-3], TableClosing(), TableResumed()])      # mid-hand: stays closing
    assert state_text(closing, WORDS["en"]) == "closing"
    closed = entry_of([*events, TableClosing(), TableClosed()])
    assert state_text(closed, WORDS["en"]) == "closed"
    closed.served = False
    assert state_text(closed, WORDS["en"]) == "closed"


def test_new_stakes_from_the_next_hand_on_as_the_table_takes_them() -> None:
    table, events = new_table("seven_card_stud", 3)
    bigger = TableConfig(game="seven_card_stud", stakes=Stakes(small_bet=50, big_bet=100, ante=10))
    between = entry_of([*events, TableConfigured(config=bigger)])
    assert stakes_label(between.stakes) == "50/100" and between.configured is None
    events += table.execute(StartHand(seed=bytes(SEED_BYTES).hex()))
    during = entry_of([*events, TableConfigured(config=bigger)])
    assert stakes_label(during.stakes) == "20/40" and "from the next hand: 50/100 (ante 10" in table_text(during, T0)
    hand = entry_of([*events, TableConfigured(config=bigger), HandStarted(hand_no=2, button=0, seats=[], commitment="")])
    assert stakes_label(hand.stakes) == "50/100" and hand.configured is None


def test_seats_sat_out_by_the_table_and_an_event_the_lobby_does_not_show() -> None:
    table, events = new_table("seven_card_stud", 3)
    events += [SitOutChanged(seat=1, sitting_out=True, reason="timed_out", since_ms=T0)]
    entry = entry_of([*events, Unheard(), Unheard()])
    assert entry.version == len(events) + 2
    assert "1:p1 2,000 (out)" in lobby_text(select([entry], LobbyQuery(), T0))
    assert "setzt aus" in table_text(entry, T0, "de")


class Unheard(Event, tag=True):
    """An event type the lobby has no handler for."""


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
