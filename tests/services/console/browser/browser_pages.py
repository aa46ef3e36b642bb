"""The pages a browser test opens on the console, and the screenshots it saves."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from console_server import ConsoleServer
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

DOCS_SCREENSHOTS = Path(__file__).resolve().parents[4] / "docs" / "screenshots"
WAIT_MS = 20_000             # what a page is given to show what a test waits for


class Pages:
    """Browser contexts (each its own cookies: one person) on the console; all closed
    at the end of the test."""

    def __init__(self, browser: Browser, console: ConsoleServer) -> None:
        self.browser, self.console = browser, console
        self.contexts: list[BrowserContext] = []

    def new(self, **options: object) -> Page:
        context = self.browser.new_context(base_url=self.console.url, **options)  # type: ignore[arg-type]
        context.set_default_timeout(WAIT_MS)
        self.contexts.append(context)
        return context.new_page()

    def close(self) -> None:
        for context in self.contexts:
            context.close()


def screenshot(page: Page, name: str) -> Path:
    """``<name>.png`` in ``docs/screenshots`` (the README shows them) when the run is
    asked to renew them (``STUDROOM_SCREENSHOTS=1``), else in the temporary folder: a
    test run leaves the working tree as it was."""
    folder = DOCS_SCREENSHOTS if os.environ.get("STUDROOM_SCREENSHOTS") == "1" else (
        Path(tempfile.gettempdir()) / "studroom-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def spectate(page: Page) -> None:
    """Open the console and watch as a spectator: the lobby shows."""
    page.goto("/")
    page.get_by_test_id("login-spectate").click()
    expect(page.get_by_test_id("lobby")).to_be_visible()


def log_in(page: Page, role: str, name: str, password: str) -> None:
    """Log in on the console's login page: the lobby shows."""
    page.goto("/")
    page.get_by_test_id("login-role").select_option(role)
    page.get_by_test_id("login-name").fill(name)
    page.get_by_test_id("login-password").fill(password)
    page.get_by_test_id("login-submit").click()
    expect(page.get_by_test_id("lobby")).to_be_visible()
    expect(page.get_by_test_id("who")).to_contain_text(name)


def lobby_row(page: Page, table_id: str) -> Locator:
    return page.locator(f"[data-testid=lobby-row][data-table='{table_id}']")


# Every card face the page ever drew at a table's seats or in the community cards,
# with the hand the page showed then ("hand|card"): a MutationObserver from the start.
RECORD_CARDS = """
(() => {
  const seen = new Set();
  window.__cardsSeen = seen;
  const look = () => {
    const info = document.querySelector("[data-testid=hand-info]");
    const m = info && info.textContent.match(/hand #(\\d+)/);
    const hand = m ? m[1] : "0";
    for (const el of document.querySelectorAll(
        "[data-testid=seats] [data-testid=card], [data-testid=community] [data-testid=card]")) {
      const seat = el.closest("[data-testid=seat]");
      seen.add(`${hand}|${el.dataset.card}|${seat ? seat.dataset.player : ""}`);
    }
  };
  new MutationObserver(look).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
})();
"""


def record_cards(page: Page) -> None:
    """From the next page load on, remember every card the page draws (``cards_seen``)."""
    page.add_init_script(RECORD_CARDS)


def cards_seen(page: Page) -> list[tuple[int, str, str]]:
    """(hand_no, card, the seat's player) of every card face the page drew ("back": a card's back)."""
    return [(int(hand), card, player) for hand, card, player in
            (entry.split("|", 2) for entry in page.evaluate("[...(window.__cardsSeen || [])]"))]
