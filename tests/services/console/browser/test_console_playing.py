"""A person plays in a real headless Chromium on the shared secure room: he logs in
with his password, takes a free seat at a table where bots play, buys in from his
cashier balance (the floor deposited it), is dealt in and sees his own down cards and
nobody else's (on the page and on the wire, held against the stored events), acts
with the buttons offered, and the hand completes; a reload resumes his seat.  Then
the replay of that hand checks its deck proofs in the browser and shows the verdict."""

from __future__ import annotations

import re
import uuid

import pytest
from bot_loop import BotLoop
from browser_pages import Pages, cards_seen, log_in, record_cards, screenshot
from browser_secrecy import Traffic, check, down_by_hand, hidden_by_hand
from console_server import ConsoleServer
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from studroom.domain.events import Acted, HandEnded, HandStarted
from studroom.services.room.plans import table_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

BOTS = 2              # seats 0 and 1; the person takes seat HIS_SEAT
HIS_SEAT = 3
PACE_MS = 30
PASSWORD = "correct horse battery staple"
# Actions the person takes when offered, the first offered (never a fold: he plays the hand out).
PREFERRED = ("check", "call", "bring_in", "complete", "show", "ante")


class Person:
    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.name = f"{table_id}-human"
        self.played: int | None = None        # the hand he played to its end


@pytest.fixture(scope="module")
def person(bots: BotLoop, console: ConsoleServer) -> Person:
    """A table with bots and free seats; a player with a password and a cashier balance."""
    table_id = f"bp{uuid.uuid4().hex[:6]}"
    bots.seat_bots(table_id, table_config(0), range(BOTS), pace_ms=PACE_MS, seed=3)
    him = Person(table_id)
    console.add_person("player", him.name, PASSWORD)
    bots.deposit(him.name, 10 * table_config(0).min_buy_in)
    return him


def hand_shown(page: Page) -> int:
    """The hand the table page shows (0: none yet)."""
    match = re.search(r"hand #(\d+)", page.get_by_test_id("hand-info").text_content() or "")
    return int(match.group(1)) if match else 0


def play_out(page: Page, hand_no: int) -> int:
    """Act whenever it is his turn in hand ``hand_no`` until the page shows it over;
    how many actions he took (the first turn's page saved as the table's screenshot)."""
    actions = 0
    mine = "[data-testid=actions]"
    while True:
        page.wait_for_function(
            """([mine, n]) => { if (document.querySelector(mine)) return true;
                                const t = document.querySelector("[data-testid=hand-info]").textContent;
                                const m = t.match(/hand #(\\d+)/);
                                return m !== null && (Number(m[1]) > n || t.includes("over")); }""",
            arg=[mine, hand_no])
        if hand_shown(page) != hand_no or "over" in (page.get_by_test_id("hand-info").text_content() or ""):
            return actions
        offered = page.locator(f"{mine} button").evaluate_all("buttons => buttons.map(b => b.dataset.testid)")
        if not offered:
            continue                                # the turn moved on meanwhile
        pick = next((f"action-{a}" for a in PREFERRED if f"action-{a}" in offered), None)
        assert pick is not None, f"no action to play on with among {offered}"
        if actions == 0:
            screenshot(page, "table")              # a table in play, as the seated player sees it
        try:
            page.locator(f"{mine} [data-testid={pick}]").click(timeout=2000)
        except PlaywrightTimeoutError:
            continue                                # the buttons went with the turn
        actions += 1
        expect(page.get_by_test_id("play-status")).not_to_contain_text("…")


def test_a_person_logs_in_sits_buys_in_sees_only_his_cards_acts_and_the_hand_completes(
        pages: Pages, bots: BotLoop, person: Person) -> None:
    page = pages.new()
    traffic = Traffic(page)
    record_cards(page)
    log_in(page, "player", person.name, PASSWORD)
    page.goto(f"/#/table/{person.table_id}")
    page.locator(f"[data-testid=sit][data-seat='{HIS_SEAT}']").click()
    expect(page.get_by_test_id("my-seat")).to_contain_text(f"seat {HIS_SEAT}")
    page.get_by_test_id("buyin-submit").click()
    expect(page.get_by_test_id("play-status")).to_contain_text("Bought in")
    seated = bots.until(person.table_id, lambda v: any(s.player == person.name and s.stack > 0 for s in v.seats),
                        "his chips in his seat")
    stack = next(s.stack for s in seated.seats if s.player == person.name)
    expect(page.get_by_test_id("my-seat")).to_contain_text(f"{stack}")

    dealt = bots.until(person.table_id, lambda v: v.hand is not None and any(
        p.player == person.name for p in v.hand.players), "a hand dealt to him")
    hand_no = dealt.hand_no
    his_seat = page.locator(f"[data-testid=seat][data-player='{person.name}']")
    expect(his_seat.locator("[data-testid=card].down").first).to_be_visible()
    acted = play_out(page, hand_no)
    assert acted >= 1, "he was never offered a turn"
    person.played = hand_no

    drawn = cards_seen(page)
    traffic.stop()
    events = bots.stored(person.table_id)
    ended = [e for e in events if isinstance(e, HandEnded) and e.hand_no == hand_no]
    assert ended, (f"hand {hand_no} did not complete; the page: {page.get_by_test_id('hand-info').text_content()}; "
                   f"stored last: {[type(e).__name__ for e in events[-8:]]}")
    started = next(e for e in events if isinstance(e, HandStarted) and e.hand_no == hand_no)
    assert HIS_SEAT in {s.seat for s in started.seats}
    assert any(isinstance(e, Acted) and e.seat == HIS_SEAT for e in events), "no action of his stored"

    verdict = check(traffic, {person.table_id: events}, viewer=person.name)
    assert not verdict.report.leaks and not verdict.leaks, str(verdict)
    own = {card for card, owner in down_by_hand(events)[hand_no].items() if owner == person.name}
    assert own, f"no down card of his stored in hand {hand_no}"
    private = [e for e in traffic.events() if e.get("private")]
    assert private, "no private copy of his cards reached his browser"
    assert own <= {c for e in private for c in _cards(e["event"])}, "his own down cards did not all reach him"
    hidden = hidden_by_hand(events, person.name)
    others = [(h, c, p) for h, c, p in drawn if c in hidden.get(h, {}) and hidden[h][c] != person.name]
    assert not others, f"his page drew other players' down cards: {others}"
    assert own <= {c for h, c, p in drawn if h == hand_no and p == person.name}, "his page did not draw his down cards"

    page.reload()                                   # the session and the seat resume, his cards with them
    expect(page.get_by_test_id("who")).to_contain_text(person.name)
    expect(page.get_by_test_id("my-seat")).to_contain_text(f"seat {HIS_SEAT}")
    expect(page.locator(f"[data-testid=seat][data-player='{person.name}'] [data-testid=card].down").first).to_be_visible()


def _cards(event: dict) -> set[str]:
    """The card texts of a dealt event's JSON (DealtCard is an array: seat, card, up, proof)."""
    return {d[1] for d in event.get("cards", []) if isinstance(d, list) and len(d) > 1 and isinstance(d[1], str)}


def test_the_replay_of_his_hand_checks_the_deck_proofs_in_the_browser(pages: Pages, bots: BotLoop,
                                                                      person: Person) -> None:
    assert person.played is not None, "the hand he played (the test before) is needed"
    page = pages.new()
    log_in(page, "player", person.name, PASSWORD)
    page.goto(f"/#/replay/{person.table_id}/{person.played}")
    verdict = page.locator("[data-testid=replay-verdict][data-ok]")
    expect(verdict).to_have_attribute("data-ok", "true")
    expect(verdict).to_contain_text("Deck verified")
    expect(page.get_by_test_id("replay-step")).to_have_attribute("data-event", "HandStarted")
    page.get_by_test_id("replay-next").press("ArrowRight")
    expect(page.get_by_test_id("replay-step")).to_have_attribute("data-step", "1")
    page.keyboard.press("End")
    expect(page.get_by_test_id("replay-step")).to_have_attribute("data-event", "HandEnded")
    mine = page.locator(f"[data-testid=replay-seat][data-seat='{HIS_SEAT}'] [data-testid=card]:not([data-card=back])")
    expect(mine.first).to_be_visible()
    hidden = hidden_by_hand(bots.stored(person.table_id), person.name)[person.played]
    drawn = page.locator("[data-testid=replay-board] [data-testid=card]").evaluate_all("els => els.map(e => e.dataset.card)")
    assert not [c for c in drawn if hidden.get(c, person.name) != person.name], \
        f"the replay drew another player's unshown down card: {drawn}"
    screenshot(page, "replay")
