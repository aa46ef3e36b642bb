"""A spectator's console, in a real headless Chromium, on the shared secure room with
bots playing at this module's own tables: the lobby lists the tables and follows
their hands; a table's page follows its hands; and neither the page nor anything the
browser received (WebSocket frames, HTTP responses) holds a down card, held against
the stored events (browser_secrecy.py)."""

from __future__ import annotations

import re
import uuid

import pytest
from bot_loop import BotLoop
from browser_pages import Pages, cards_seen, lobby_row, record_cards, screenshot, spectate
from browser_secrecy import Traffic, check, hidden_by_hand
from playwright.sync_api import Page, expect
from studroom.services.room.plans import table_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TABLES = 2
BOTS = 4
PACE_MS = 40          # the bots' pause before each action: hands a page can follow
PHONE = {"width": 375, "height": 812}


@pytest.fixture(scope="module")
def watched(bots: BotLoop) -> list[str]:
    """This module's tables, each with BOTS bots playing, a hand dealt."""
    ids = [f"bw{uuid.uuid4().hex[:6]}" for _ in range(TABLES)]
    for index, table_id in enumerate(ids):
        bots.seat_bots(table_id, table_config(index), range(BOTS), pace_ms=PACE_MS, seed=index + 1)
    for table_id in ids:
        bots.until(table_id, lambda v: v.hand_no >= 1, f"{table_id}: a first hand")
    return ids


def hand_beyond(page: Page, scope: str, hand_no: int) -> None:
    """Wait until the text of the element ``scope`` (a CSS selector) names a hand after ``hand_no``."""
    page.wait_for_function(
        """([scope, n]) => { const el = document.querySelector(scope);
                             const m = el && el.textContent.match(/hand #(\\d+)/);
                             return m !== null && Number(m[1]) > n; }""", arg=[scope, hand_no])


def test_the_lobby_lists_the_bot_tables_and_follows_their_hands(pages: Pages, bots: BotLoop,
                                                                  watched: list[str]) -> None:
    page = pages.new()
    spectate(page)
    for table_id in watched:
        expect(lobby_row(page, table_id)).to_be_visible()
        expect(lobby_row(page, table_id).get_by_test_id("lobby-seats")).to_have_text(re.compile(rf"^{BOTS}/"))
    for table_id in watched:
        hand_no = bots.view(table_id).hand_no
        hand_beyond(page, f"[data-testid=lobby-row][data-table='{table_id}']", hand_no)
    screenshot(page, "lobby")

    phone = pages.new(viewport=PHONE)
    spectate(phone)
    expect(lobby_row(phone, watched[0])).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], "the lobby is wider than a phone"
    screenshot(phone, "lobby-phone")


def test_a_spectators_table_page_follows_the_hands(pages: Pages, bots: BotLoop, watched: list[str]) -> None:
    table_id = watched[0]
    page = pages.new()
    spectate(page)
    row = lobby_row(page, table_id)
    row.focus()
    row.press("Enter")                            # keyboard operable
    expect(page).to_have_url(re.compile(rf"#/table/{table_id}$"))
    players = {f"{table_id}-p{seat}" for seat in range(BOTS)}
    expect(page.get_by_test_id("seat-name").filter(has_text=re.compile(rf"^{table_id}-p\d$"))).to_have_count(BOTS)
    assert set(page.get_by_test_id("seat-name").all_text_contents()) >= players
    hand_no = bots.view(table_id).hand_no
    hand_beyond(page, "[data-testid=hand-info]", hand_no)
    expect(page.get_by_test_id("log").locator("li").first).to_be_visible()
    expect(page.locator("[data-testid=seats] [data-testid=card]:not([data-card=back])").first).to_be_visible()
    expect(page.locator("[data-testid=seats] [data-testid=card][data-card=back]").first).to_be_visible()


def test_a_spectators_page_and_traffic_hold_no_down_card(pages: Pages, bots: BotLoop, watched: list[str]) -> None:
    page = pages.new()
    traffic = Traffic(page)
    record_cards(page)
    spectate(page)
    for table_id in watched:
        expect(lobby_row(page, table_id)).to_be_visible()
    table_id = watched[1]
    page.goto(f"/#/table/{table_id}")
    hand_no = bots.view(table_id).hand_no
    hand_beyond(page, "[data-testid=hand-info]", hand_no + 2)     # two whole hands watched
    drawn = cards_seen(page)
    traffic.stop()

    stored = {t: bots.stored(t) for t in watched}
    verdict = check(traffic, stored, viewer=None)
    assert not verdict.report.leaks and not verdict.leaks, str(verdict)
    events = traffic.events()
    assert len({e["version"] for e in events if e["table"] == table_id}) > 20, "the page got few events"
    assert verdict.report.hands >= 2 and verdict.report.hidden_cards and verdict.tables_checked, str(verdict)

    hidden = hidden_by_hand(stored[table_id])
    faces = [(hand, card) for hand, card, _ in drawn if card != "back"]
    assert faces and any(card == "back" for _, card, _ in drawn), f"the page drew no card faces and backs: {drawn}"
    shown_down = [(hand, card) for hand, card in faces if card in hidden.get(hand, {})]
    assert not shown_down, f"the spectator's page drew down cards: {shown_down}"
