"""The operator's desk in a real headless Chromium on the shared secure room: an
operator opens a table from the desk, bots sit and play there, and he closes it
(every seat cashed out, the table closed in the store); a player's browser cannot do
an operator's action: the page refuses the desk, and the ops sent over his own
connection are refused by the gateway and by NATS (his identity may not publish on
the operator's subjects), and nothing changed at the table."""

from __future__ import annotations

import uuid

import pytest
from bot_loop import BotLoop
from browser_pages import Pages, log_in, screenshot
from console_server import ConsoleServer
from playwright.sync_api import expect
from studroom.domain.events import PlayerLeft, TableClosed
from studroom.services.room.plans import table_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

RUN = uuid.uuid4().hex[:6]
BOSS, PLAYER = f"bd{RUN}-boss", f"bd{RUN}-player"
PASSWORD = "a long enough password"
PACE_MS = 30

# The player's page sends operator ops through its own connection (the page's api module).
SEND_AS_THE_PAGE = """async ([table, victim]) => {
  const { api } = await import("/static/js/api.js");
  const asks = [
    ["desk_tables", {}],
    ["desk_health", {}],
    ["command", { table, command: { type: "CloseTable" } }],
    ["command", { table, command: { type: "PauseTable" } }],
    ["command", { table, command: { type: "SitOutPlayer", player: victim } }],
    ["command", { table, command: { type: "RemovePlayer", player: victim } }],
  ];
  const out = [];
  for (const [op, args] of asks) {
    try { out.push([op, args.command ? args.command.type : "", "ok", await api.request(op, args)]); }
    catch (e) { out.push([op, args.command ? args.command.type : "", e.code || "?", e.message]); }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def people(console: ConsoleServer) -> None:
    console.add_person("operator", BOSS, PASSWORD)
    console.add_person("player", PLAYER, PASSWORD)


@pytest.fixture(scope="module")
def busy_table(bots: BotLoop) -> str:
    """A table of this module with two bots playing."""
    table_id = f"bd{RUN}"
    bots.seat_bots(table_id, table_config(0), range(2), pace_ms=PACE_MS, seed=6)
    bots.until(table_id, lambda v: v.hand_no >= 1, "a first hand")
    return table_id


def test_an_operator_opens_and_closes_a_table_from_the_desk(pages: Pages, bots: BotLoop, people: None,
                                                             busy_table: str) -> None:
    table_id = f"bo{RUN}"
    page = pages.new()
    log_in(page, "operator", BOSS, PASSWORD)
    page.get_by_test_id("nav-desk").click()
    expect(page.locator(f"[data-testid=desk-table][data-table='{busy_table}']")).to_be_visible()

    opening = page.get_by_test_id("open-table")
    opening.locator("summary").first.click()
    page.get_by_test_id("open-table-id").fill(table_id)
    page.get_by_test_id("open-game").select_option("seven_card_stud")
    page.get_by_test_id("open-seats").fill("6")
    opening.locator("details summary").click()                    # stakes and timers
    for field, value in (("small_bet", "20"), ("big_bet", "40"), ("ante", "5"), ("rake_bp", "500"),
                         ("rake_cap", "30")):
        page.get_by_test_id(f"open-{field}").fill(value)
    page.get_by_test_id("open-table-submit").click()
    expect(page.get_by_test_id("desk-status")).to_have_text(f"Open {table_id}: done")
    view = bots.view(table_id)
    assert (view.state, view.config.seats, view.config.stakes.small_bet, view.config.stakes.big_bet,
            view.config.stakes.ante, view.config.rake.basis_points) == ("open", 6, 20, 40, 5, 500)

    bots.seat_bots(table_id, view.config, range(3), pace_ms=PACE_MS, seed=8)   # already open: they sit
    bots.until(table_id, lambda v: v.hand_no >= 1, "a hand at the table opened from the desk")
    page.reload()
    row = page.locator(f"[data-testid=desk-table][data-table='{table_id}']")
    expect(row.get_by_test_id("desk-player")).to_have_count(3)
    expect(page.get_by_test_id("rake-chart")).to_be_visible()
    expect(page.get_by_test_id("health-chart")).to_be_visible()
    expect(page.get_by_test_id("reconcile-verdict")).to_be_visible()
    screenshot(page, "desk")

    row.locator("summary").click()
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_test_id("desk-close").click()
    expect(page.get_by_test_id("desk-status")).to_have_text(f"Close {table_id}: done")
    bots.until(table_id, lambda v: v.state == "closed", "the table closed")
    events = bots.stored(table_id)
    assert any(isinstance(e, TableClosed) for e in events)
    left = sorted(e.player for e in events if isinstance(e, PlayerLeft) and e.reason == "table_closed")
    assert left == [f"{table_id}-p{seat}" for seat in range(3)], "every seat cashed out at the close"
    page.reload()
    expect(page.locator(f"[data-testid=desk-table][data-table='{table_id}']")).to_have_attribute("data-state", "closed")


def test_a_players_browser_cannot_do_an_operators_action(pages: Pages, bots: BotLoop, people: None,
                                                         busy_table: str) -> None:
    page = pages.new()
    log_in(page, "player", PLAYER, PASSWORD)
    expect(page.get_by_test_id("nav-desk")).to_have_count(0)
    page.goto("/#/desk")
    expect(page.get_by_test_id("forbidden")).to_contain_text("not for a player")
    before = bots.view(busy_table)
    victim = before.seats[0].player

    answers = page.evaluate(SEND_AS_THE_PAGE, [busy_table, victim])
    refused = {(op, command): code for op, command, code, _ in answers}
    assert refused == {("desk_tables", ""): "forbidden", ("desk_health", ""): "forbidden",
                       ("command", "CloseTable"): "forbidden", ("command", "PauseTable"): "forbidden",
                       ("command", "SitOutPlayer"): "forbidden", ("command", "RemovePlayer"): "forbidden"}, answers

    after = bots.until(busy_table, lambda v: v.hand_no > before.hand_no, "the table deals on")
    assert after.state == "open" and [s.player for s in after.seats] == [s.player for s in before.seats]
    assert not any(s.sit_out_reason == "operator" for s in after.seats), "nobody was sat out by the floor"
    events = bots.stored(busy_table)
    assert not any(isinstance(e, TableClosed) or isinstance(e, PlayerLeft) and e.reason == "removed"
                   for e in events), "nothing closed, nobody removed"
