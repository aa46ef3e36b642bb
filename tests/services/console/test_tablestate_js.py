"""The table page's state (static/js/tablestate.js) in a real headless Chromium, fed
the events a browser is pushed on simulated hands of the three games and checked after
each one against the domain: a player's public and private copies against
domain.views.table_view for his seat, a spectator joining mid-hand against the lobby
projection's entry (and never a down card at the spectator).  The first event after
which they differ is named.  Then R2: the table page offers exactly the seats the table
takes (the player cap from watch_table's answer, not the seat numbers)."""

from __future__ import annotations

import json
import random

import msgspec
import pytest

from browser_page import static_page
from studroom.domain.commands import SitDown
from studroom.domain.errors import DomainError
from studroom.domain.events import Event, HandStarted
from studroom.domain.simulate import new_table, play_hand
from studroom.domain.table import Table
from studroom.domain.views import private, public, table_view
from studroom.projections.lobby.projection import apply as lobby_apply
from studroom.services.console.shapes import whole

GAMES = [("seven_card_stud", 4, 1), ("seven_card_stud_hilo", 5, 2), ("five_card_stud", 6, 3)]
HANDS = 8
SEAT = 1                               # the player whose copies the browser gets

# Folds each step's messages and returns the state after each step, as plain data.
FOLD = """async ([initial, maxPlayers, viewer, stepsJson]) => {
  const steps = JSON.parse(stepsJson);
  const { TableState } = await import("/js/tablestate.js");
  const s = new TableState("t", viewer);
  s.load(initial);
  const snap = () => ({ version: s.version, turn: s.turn,
    seats: [...s.seats.values()].map(({ seat, player, stack, sitting_out }) => ({ seat, player, stack, sitting_out })),
    hand: s.hand && { hand_no: s.hand.hand_no, over: s.hand.over, pot: s.hand.pot, street: s.hand.street,
      players: [...s.hand.players.values()].map((p) => ({ seat: p.seat, stack: p.stack, bet: p.bet,
        folded: p.folded, all_in: p.all_in, cards: p.cards.map((c) => [c.card, c.up]) })) } });
  const out = [snap()];
  for (const messages of steps) { for (const m of messages) s.apply(m.version, m.event); out.push(snap()); }
  return JSON.stringify(out);                // (much quicker through Playwright than objects)
}"""


@pytest.fixture(scope="module")
def page():
    with static_page() as (page, _origin):
        yield page


def played(game: str, players: int, seed: int) -> list[Event]:
    """A table's whole stream: opened, players seated and bought in, HANDS hands."""
    table, stream = new_table(game, players)
    rng = random.Random(seed)
    for _ in range(HANDS):
        stream += play_hand(table, rng, timeout_rate=0.1)
    return stream


def fold(page, initial: dict, max_players: int | None, viewer: str | None, steps: list[list[dict]]) -> list[dict]:
    """The page's state after the watch's answer, then after each step's messages."""
    return json.loads(page.evaluate(FOLD, [initial, max_players, viewer, json.dumps(steps)]))


def mid_hand(stream: list[Event]) -> int:
    """Where a late viewer joins: a few events into the second hand."""
    starts = [i for i, e in enumerate(stream) if isinstance(e, HandStarted)]
    return starts[1] + 9


def assert_same(case: str, stream: list[Event], join: int, seen: list[dict], expected: list[dict]) -> None:
    assert len(seen) == len(expected)
    for i, (got, want) in enumerate(zip(seen, expected, strict=True)):
        at = "the watch's answer" if i == 0 else f"{type(stream[join + i - 1]).__name__} (version {join + i})"
        assert got == want, f"{case}: the page's state differs from the domain's after {at}"


# --- a player: table_view for his seat ---------------------------------------------------

def player_terms(state: dict) -> dict:
    """A TableView, or the page's state, in the same terms (the page keeps an ended hand
    on show: no hand for the domain)."""
    hand = state["hand"] if state["hand"] and not state["hand"].get("over") else None
    return {"version": state["version"], "turn": state["turn"],
            "seats": {s["seat"]: [s["player"], s["stack"], s["sitting_out"]] for s in state["seats"]},
            "hand": hand and {"hand_no": hand["hand_no"], "pot": hand["pot"], "street": hand["street"],
                              "players": {p["seat"]: [p["stack"], p["bet"], p["folded"], p["all_in"], p["cards"]]
                                          for p in hand["players"]}}}


@pytest.mark.parametrize("game, players, seed", GAMES)
@pytest.mark.parametrize("late", [False, True], ids=["from-the-opening", "joins-mid-hand"])
def test_a_players_page_folds_his_copies_into_the_domains_view(page, game, players, seed, late):
    """His public and private copy of each event, in either order (two subjects)."""
    stream = played(game, players, seed)
    join = mid_hand(stream) if late else 1
    mirror = Table.replay(stream[:join])
    order = random.Random(seed)
    views, steps = [table_view(mirror, SEAT)], []
    for version, event in enumerate(stream[join:], join + 1):
        copies = [{"version": version, "event": msgspec.to_builtins(public(event))}]
        if (mine := private(event, SEAT)) is not None:
            copies.insert(order.randrange(2), {"version": version, "event": msgspec.to_builtins(mine)})
        steps.append(copies)
        mirror.apply(event)
        views.append(table_view(mirror, SEAT))
    initial = msgspec.to_builtins(views[0])
    seen = fold(page, initial, views[0].config.max_players, f"p{SEAT}", steps)
    assert_same(f"{game}, seat {SEAT}", stream, join, [player_terms(s) for s in seen],
                [player_terms(msgspec.to_builtins(v)) for v in views])


# --- a spectator: the lobby's entry -------------------------------------------------------

def spectator_pair(snap: dict, entry: dict) -> tuple[dict, dict]:
    """The page's state and the entry, in the same terms: a player's up cards and his
    down cards, faceless (the lobby keeps a count, no order), or the cards he showed."""
    def cards(got: list, want: dict) -> tuple[list, list]:
        if want.get("shown"):
            return [c for c, _ in got], want["shown"]
        return [[c for c, up in got if up], [c for c, up in got if not up]], [want.get("up", []), [None] * want.get("down", 0)]

    hand, wanted = snap["hand"], entry.get("hand")
    got = {"version": snap["version"], "seats": {s["seat"]: s["stack"] for s in snap["seats"]}, "hand": None}
    want = {"version": entry["version"], "seats": {r["seat"]: r.get("stack", 0) for r in entry.get("players", [])},
            "hand": None}
    if wanted:
        turn = wanted.get("turn")
        want["hand"] = {"hand_no": wanted["hand_no"], "over": wanted.get("over", False), "pot": wanted.get("pot", 0),
                        "street": wanted.get("street", -1), "turn": turn and [turn["turn"], turn.get("seat")],
                        "players": {}}
        got["hand"] = hand and {"hand_no": hand["hand_no"], "over": hand["over"], "pot": hand["pot"],
                                "street": hand["street"], "turn": snap["turn"] and [snap["turn"]["turn"], snap["turn"].get("seat")],
                                "players": {}}
        for p in wanted.get("players", []):
            mine = next((q for q in hand["players"] if q["seat"] == p["seat"]), None) if hand else None
            got_cards, want_cards = cards(mine["cards"] if mine else [], p)
            want["hand"]["players"][p["seat"]] = [p["stack"], p.get("bet", 0), p.get("folded", False), want_cards]
            if got["hand"]:
                got["hand"]["players"][p["seat"]] = mine and [mine["stack"], mine["bet"], mine["folded"], got_cards]
    return got, want


@pytest.mark.parametrize("game, players, seed", GAMES)
def test_a_spectator_joining_mid_hand_folds_the_public_copies_into_the_lobbys_entry(page, game, players, seed):
    stream = played(game, players, seed)
    join = mid_hand(stream)
    entry = None
    for version, event in enumerate(stream[:join], 1):
        entry = lobby_apply(entry, public(event), version, version, 0)
    entries, steps = [whole(entry)], []
    for version, event in enumerate(stream[join:], join + 1):
        steps.append([{"version": version, "event": msgspec.to_builtins(public(event))}])
        entry = lobby_apply(entry, public(event), version, version, 0)
        entries.append(whole(entry))
    seen = fold(page, entries[0], None, None, steps)
    pairs = [spectator_pair(s, e) for s, e in zip(seen, entries, strict=True)]
    assert_same(f"{game}, a spectator", stream, join, [g for g, _ in pairs], [w for _, w in pairs])


# --- R2: the player cap, as the gateway's watch_table answer carries it ------------------

# The table page (table.js, its play panel) on a stub of the api answering watch_table.
TABLE_PAGE = """async ([answer, role]) => {
  const { show } = await import("/js/table.js");
  if (window.closeTable) window.closeTable();
  const main = document.getElementById("main");
  main.replaceChildren();
  const api = {
    request: async (op) => (op === "cashier" ? { ok: true, balance: 5000 } : answer),
    subscribe: (key, op, args, onAnswer) => { onAnswer(answer); return { answer: Promise.resolve(answer), end() {} }; },
    on: () => () => {},
  };
  window.closeTable = show(main, { api, args: ["t"], session: { role, name: role === "player" ? "newbie" : "" } });
}"""


def takes(stream: list[Event], seat: int) -> bool:
    """Whether the table seats a newcomer in ``seat``."""
    try:
        Table.replay(stream).execute(SitDown(seat=seat, player="newbie"))
    except DomainError:
        return False
    return True


@pytest.mark.parametrize("game, players", [("seven_card_stud", 8), ("seven_card_stud", 7), ("five_card_stud", 8)])
def test_R2_the_table_page_offers_exactly_the_seats_the_table_takes(page, game, players):
    table, stream = new_table(game, players)
    cap, seats = table.config.max_players, table.config.seats
    entry = None
    for version, event in enumerate(stream, 1):
        entry = lobby_apply(entry, public(event), version, version, 0)
    spectator = {"entry": whole(entry)}
    player = {"view": msgspec.to_builtins(table_view(table, None)), "max_players": cap}   # as watch_table answers
    page.evaluate(TABLE_PAGE, [spectator, "spectator"])
    assert page.get_by_test_id("table-players").text_content() == f"{cap} players at most"
    page.evaluate(TABLE_PAGE, [player, "player"])
    assert page.get_by_test_id("table-players").text_content() == f"{cap} players at most"
    assert page.get_by_test_id("seat").count() == seats == 10             # seat numbers 0..9, all drawn
    page.get_by_test_id("balance").first.wait_for()
    offered = [int(b.get_attribute("data-seat")) for b in page.get_by_test_id("sit").all()]
    assert offered == [seat for seat in range(seats) if takes(stream, seat)]
    if len(offered) == 0:
        assert page.get_by_test_id("no-seat").text_content() == f"The table is full: {cap} players at most."
        assert page.get_by_test_id("join-waiting").is_visible()
