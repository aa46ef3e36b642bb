"""The replay page (static/js/replay.js) in a real headless Chromium, on hand records
the Python domain makes (domain/hand_record.py), handed to it by a stub of the
browser's api object (the gateway's `replay` op is tested on real servers elsewhere):
it steps through the hand with the buttons and the keys, tells each step, shows the
board as of that step (only the cards the reader may see), and the deck proofs'
verdict; a forged card is named in red; it fits a phone and fetches nothing outside."""

from __future__ import annotations

import json
import random
import re

import msgspec
import pytest

from browser_page import static_page
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.events import HandEnded, HandShown, TableEvent
from studroom.domain.hand_record import make_record, record_from_stream
from studroom.domain.hands import find
from studroom.domain.scenario import play
from studroom.domain.simulate import new_table, play_hand
from test_proofs_js import SCENARIOS, python_verdict

SKIPPED = {"TurnStarted", "PauseStarted", "PauseEnded"}

SHOW = """async ([record, hand, verdict]) => {
  const { showReplay } = await import("/js/replay.js");
  window.asked = [];
  const api = { request: (op, args) => { window.asked.push([op, args]);
    return record ? Promise.resolve({ id: 1, ok: true, record, verdict })
                  : Promise.reject(Object.assign(new Error("no such hand"), { code: "unknown_hand" })); } };
  await showReplay(document.getElementById("main"), api, "t1", hand);
}"""

WALK = """() => {
  const texts = [];
  const next = document.querySelector('[data-testid="replay-next"]');
  document.querySelector('[data-testid="replay-first"]').click();
  for (;;) {
    const step = document.querySelector('[data-testid="replay-step"]');
    texts.push([step.dataset.event, step.textContent]);
    if (next.getAttribute("aria-disabled") === "true") return texts;
    next.click();
  }
}"""


def wire(record) -> dict:
    """The record as the gateway sends it: msgspec JSON."""
    return json.loads(msgspec.json.encode(record))


def table_hands(players: int, count: int, seed: int, game: str = "seven_card_stud"):
    table, stream = new_table(game, players)
    rng = random.Random(seed)
    for _ in range(count):
        stream += play_hand(table, rng, timeout_rate=0.1)
    return stream


def shown_hand(stream) -> int:
    """The number of a hand that went to a showdown."""
    spans = [e.hand_no for e in stream if isinstance(e, HandEnded) and e.ended_on == "showdown"]
    return spans[0]


@pytest.fixture(scope="module")
def browser():
    with static_page() as (page, origin):
        yield page, origin


def show(page, record: dict | None, hand: int = 1, room: dict | None = None) -> None:
    page.evaluate(SHOW, [record, hand, room])
    page.wait_for_selector('[data-testid="replay-verdict"][data-ok], [data-testid="replay-status"]')


def verdict(page) -> tuple[str, str]:
    el = page.locator('[data-testid="replay-verdict"]')
    return el.get_attribute("data-ok"), el.inner_text()


def test_a_players_hand_steps_through_with_buttons_and_keys_and_is_verified(browser):
    page, _ = browser
    stream = table_hands(3, 12, seed=4)
    hand_no = shown_hand(stream)
    record = wire(record_from_stream(stream, find(stream, hand_no), "p1"))
    show(page, record, hand_no, {"consistent": True})
    room = page.locator('[data-testid="replay-room-verdict"]')
    assert room.get_attribute("data-ok") == "true" and "re-run of this hand: consistent" in room.inner_text()
    assert page.evaluate("window.asked") == [["replay", {"table": "t1", "hand_no": hand_no}]]

    proofs, problems = python_verdict(record["events"])
    assert problems == [] and proofs > 0
    ok, text = verdict(page)
    assert ok == "true" and f"Deck verified: {proofs} cards checked against the commitment" in text

    steps = [e for e in record["events"] if e["type"] not in SKIPPED]
    step = page.locator('[data-testid="replay-step"]')
    position = page.locator('[data-testid="replay-position"]')
    assert f"Hand {hand_no} begins" in step.inner_text() and position.inner_text() == f"Step 1 of {len(steps)}"
    # the Next button has the focus: the keys step from there
    assert page.evaluate("document.activeElement.dataset.testid") == "replay-next"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert step.get_attribute("data-step") == "2" and step.get_attribute("data-event") == steps[2]["type"]
    page.keyboard.press("ArrowLeft")
    assert step.get_attribute("data-step") == "1"
    page.keyboard.press("End")
    assert step.get_attribute("data-event") == "HandEnded" and "The hand is over" in step.inner_text()
    assert page.locator('[data-testid="replay-next"]').get_attribute("aria-disabled") == "true"
    page.click('[data-testid="replay-prev"]')
    assert step.get_attribute("data-step") == str(len(steps) - 2)
    page.keyboard.press("Home")
    assert step.get_attribute("data-step") == "0"

    # the board at the end: the final stacks, an empty pot
    page.keyboard.press("End")
    ended = record["events"][-1]
    seats = page.locator('[data-testid="replay-seat"]')
    stacks = {seats.nth(i).get_attribute("data-seat"): seats.nth(i).locator(".seat-money").inner_text()
              for i in range(seats.count())}
    assert {seat: text.split(" · ")[0] for seat, text in stacks.items()} == {
        seat: f"Stack {stack:,}" for seat, stack in ended["stacks"].items()}
    assert page.locator('[data-testid="replay-pot"]').inner_text() == "0"


def test_the_board_shows_only_the_cards_the_reader_may_see(browser):
    page, _ = browser
    stream = table_hands(4, 10, seed=7)
    hand_no = next(e.hand_no for e in stream if isinstance(e, HandEnded) and e.ended_on == "fold")
    record = wire(record_from_stream(stream, find(stream, hand_no), "p2"))
    viewer = record["viewer"]
    show(page, record, hand_no)
    page.keyboard.press("End")
    dealt = {}
    for event in record["events"]:
        for seat, card, _up, _proof in event.get("cards", []) if event["type"] == "CardsDealt" else []:
            dealt.setdefault(str(seat), []).append(card or "back")
    seats = page.locator('[data-testid="replay-seat"]')
    on_board = {seats.nth(i).get_attribute("data-seat"):
                seats.nth(i).locator('[data-testid="card"]').evaluate_all("els => els.map(e => e.dataset.card)")
                for i in range(seats.count())}
    assert on_board == dealt
    assert "back" not in on_board[str(viewer)] and any("back" in cards for seat, cards in on_board.items()
                                                     if seat != str(viewer))
    assert page.locator(f'[data-testid="replay-seat"][data-seat="{viewer}"]').get_attribute("class").split().count("mine") == 1


def test_a_forged_card_is_named_in_red(browser):
    page, _ = browser
    stream = table_hands(3, 12, seed=4)
    hand_no = shown_hand(stream)
    record = wire(record_from_stream(stream, find(stream, hand_no), None))     # the dealer's full record
    shown = next(e for e in record["events"] if e["type"] == "HandShown")
    forged = shown["cards"][2]
    dealt = next(e for e in record["events"] if e["type"] == "CardsDealt")
    target = next(d for d in dealt["cards"] if d[0] == shown["seat"] and d[1] == forged)
    used = {c for e in record["events"] if e["type"] == "CardsDealt" for c in [d[1] for d in e["cards"]] + e["burned"]}
    other = next(r + s for r in "AKQJT98765432" for s in "shdc" if r + s not in used)
    target[1] = other
    show(page, record, hand_no, {"consistent": False, "rules": None,
                                 "deck": {"fair": False, "findings": ["a card the seed does not make"]}})
    room = page.locator('[data-testid="replay-room-verdict"]')
    assert room.get_attribute("data-ok") == "false" and "NOT fair (a card the seed does not make)" in room.inner_text()
    ok, text = verdict(page)
    assert ok == "false" and "Deck proofs fail" in text
    _, problems = python_verdict(record["events"])
    assert len(problems) == page.locator('[data-testid="replay-failures"] li').count() >= 1
    named = page.locator(f'[data-testid="replay-failures"] li[data-card="{other}"]')
    assert named.count() >= 1 and "does not open the commitment" in named.first.inner_text()
    page.keyboard.press("Home")
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    assert page.locator(f'.card.proof-failed[data-card="{other}"]').count() == 1


@pytest.mark.parametrize("name", [
    "R17_eight_players_river_is_a_shuffled_community_card.json",
    "R17_seven_players_burns_reshuffled_before_the_river.json",
    "R28_R29_exposed_seventh_card_still_counts_as_down.json",
    "R28_mixed_up_last_cards_skip_the_last_betting_round.json",
    "R25_hilo_wheel_scoops_high_and_low.json",
    "R19_timeout_all_in_protection_keeps_player_in_main_pot.json",
    "R15_R27_uncalled_part_of_a_river_bet_is_returned_unraked.json",
    "R05_fewer_than_two_antes_cancels_the_hand.json",
    "R22_R26_mucked_best_hands_give_up_main_and_side_pot.json",
])
def test_every_step_of_a_scripted_hand_is_told(browser, name):
    page, _ = browser
    script = json.loads((SCENARIOS / name).read_text())["scenario"]
    events = msgspec.convert(play(script)["events"], list[TableEvent])
    config = TableConfig(game=script["game"], stakes=msgspec.convert(script["stakes"], Stakes))
    seated = {s["seat"]: s["player"] for s in script["seats"]}
    for viewer, full in [(None, True), (script["seats"][0]["seat"], False)]:
        record = wire(make_record("t1", config, seated, events, viewer, full=full))
        show(page, record)
        told = page.evaluate(WALK)
        assert [kind for kind, _ in told] == [e["type"] for e in record["events"] if e["type"] not in SKIPPED]
        # every step in words of its own: no bare event name, no "undefined", no "NaN"
        assert all(text.strip() for _, text in told), told
        whole = page.locator('[data-testid="replay"]').inner_text()
        assert not {"undefined", "NaN", "null", "None", "[object"} & set(re.findall(r"[\w\[]+", whole)), whole
        ok, text = verdict(page)
        assert ok == "true" and ("Deck verified" in text if any(e["type"] == "CardsDealt" for e in record["events"])
                                 else "no card was dealt" in text)
        if any(isinstance(e, HandShown) for e in events):
            assert any(kind == "HandShown" and " shows " in text for kind, text in told)


def test_a_hand_that_cannot_be_had_says_why(browser):
    page, _ = browser
    show(page, None, 3)
    status = page.locator('[data-testid="replay-status"]')
    assert status.get_attribute("role") == "alert" and "no such hand (unknown_hand)" in status.inner_text()


def test_phone_width_keyboard_focus_and_nothing_from_outside(browser):
    page, origin = browser
    stream = table_hands(6, 8, seed=12)
    hand_no = shown_hand(stream)
    record = wire(record_from_stream(stream, find(stream, hand_no), "p0"))
    page.set_viewport_size({"width": 360, "height": 740})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(origin + "/test-page.html")
    show(page, record, hand_no)
    page.keyboard.press("End")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # Tab moves the focus visibly from control to control
    page.keyboard.press("Tab")
    focused = page.evaluate("""() => { const el = document.activeElement;
        return [el.dataset.testid, getComputedStyle(el).outlineStyle]; }""")
    assert focused == ["replay-last", "solid"]
    page.keyboard.press("Enter")
    assert page.locator('[data-testid="replay-step"]').get_attribute("data-event") == "HandEnded"
    # the list of steps is one tab stop, the current step; the keys move it along
    page.keyboard.press("Tab")
    current = """() => [document.activeElement.getAttribute("aria-current"),
                        [...document.querySelectorAll('[data-testid="replay-log"] button')].indexOf(document.activeElement)]"""
    last = page.locator('[data-testid="replay-log"] button').count() - 1
    assert page.evaluate(current) == ["step", last]
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(current) == ["step", last - 1]
    assert page.locator('[data-testid="replay-step"]').get_attribute("data-step") == str(last - 1)
    assert requests and all(url.startswith(origin + "/") for url in requests), requests
