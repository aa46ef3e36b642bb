"""The console's deck-proof checker (static/js/proofs.js) in a real headless Chromium,
with WebCrypto: on hands the Python domain deals (scripted scenarios, simulated play,
the format-1 hands stored before format 2), as the dealer's full record and as each
player may see them, its verdict is the standalone verifier's (verifier/verify_deck.py),
word for word; a changed card, salt, path, leaf, root or format fails and the failure
names the card (or the commitment)."""

from __future__ import annotations

import base64
import importlib.util
import json
import random
from pathlib import Path

import msgspec
import pytest

from browser_page import static_page
from studroom.domain import views
from studroom.domain.events import AntesCollected, CardsDealt, Event, HandShown, HandStarted, TableEvent
from studroom.domain.scenario import play
from studroom.domain.seen import seen_by
from studroom.domain.simulate import new_table, play_hand

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "tests" / "scenarios"
FORMAT_1 = sorted((ROOT / "tests" / "fixtures" / "deck_v1").glob("*.json"))

_spec = importlib.util.spec_from_file_location("verify_deck", ROOT / "verifier" / "verify_deck.py")
verify_deck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_deck)

CHECK = """async (hands) => {
  const { checkHand } = await import("/js/proofs.js");
  const out = [];
  for (const events of hands) out.push(await checkHand(events));
  return out;
}"""


@pytest.fixture(scope="module")
def page():
    with static_page() as (page, _origin):
        yield page


def check(page, hands: list[list[dict]]) -> list[dict]:
    return page.evaluate(CHECK, hands)


def python_verdict(events: list[dict]) -> tuple[int, list[str]]:
    (hand,) = verify_deck.verify(events)
    return hand.proofs, hand.problems


def hands_of(stream: list[Event]) -> list[list[Event]]:
    """Each hand's events, HandStarted first."""
    hands: list[list[Event]] = []
    for event in stream:
        if isinstance(event, HandStarted):
            hands.append([])
        if hands:
            hands[-1].append(event)
    return hands


def readers(hand: list[Event]) -> list[list[dict]]:
    """The hand as the dealer recorded it, as anyone sees it, and as each dealt player."""
    seats = [s.seat for s in hand[0].seats]  # type: ignore[attr-defined]
    views = [list(hand), seen_by(hand, None)] + [seen_by(hand, seat) for seat in seats]
    return [msgspec.to_builtins(view) for view in views]


def scenario_hand(name: str) -> list[Event]:
    script = json.loads((SCENARIOS / name).read_text())["scenario"]
    return msgspec.convert(play(script)["events"], list[TableEvent])


def simulated(players: int, count: int, seed: int, game: str = "seven_card_stud") -> list[list[Event]]:
    table, events = new_table(game, players)
    rng = random.Random(seed)
    for _ in range(count):
        events += play_hand(table, rng, timeout_rate=0.05)
    return hands_of(events)


def assert_same_verdicts(page, hands: list[list[dict]]) -> list[dict]:
    results = check(page, hands)
    for events, result in zip(hands, results, strict=True):
        proofs, problems = python_verdict(events)
        assert (result["checked"], [f["message"] for f in result["failures"]]) == (proofs, problems)
        assert result["ok"] == (not problems)
    return results


SCRIPTED = ["R13_check_raise.json", "R17_seven_players_burns_reshuffled_before_the_river.json",
            "R17_eight_players_river_is_a_shuffled_community_card.json",
            "R17_five_card_stud_ten_players_reshuffle_before_fifth_street.json",
            "R21_R22_last_aggressor_shows_first_and_a_muck_gives_up_the_pot.json",
            "R28_R29_exposed_seventh_card_still_counts_as_down.json", "R25_hilo_wheel_scoops_high_and_low.json"]


@pytest.mark.parametrize("name", SCRIPTED)
def test_R32_scripted_hands_verify_in_the_browser_for_every_reader(page, name):
    hand = scenario_hand(name)
    results = assert_same_verdicts(page, readers(hand))
    committed = any(isinstance(e, AntesCollected) and e.deck_root for e in hand)
    assert all(r["ok"] and r["committed"] == committed for r in results)
    if committed:
        assert all(r["format"] == 2 for r in results) and results[0]["checked"] > 0


def test_R32_simulated_hands_in_every_game_verify_in_the_browser(page):
    hands = simulated(4, 6, seed=3) + simulated(3, 4, seed=5, game="seven_card_stud_hilo") \
        + simulated(5, 4, seed=8, game="five_card_stud")
    views = [view for hand in hands for view in readers(hand)]
    results = assert_same_verdicts(page, views)
    assert all(r["ok"] for r in results) and sum(r["checked"] for r in results) > 100


@pytest.mark.parametrize("path", FORMAT_1, ids=lambda p: p.stem)
def test_R32_hands_stored_in_format_1_verify_in_the_browser(page, path):
    stored = msgspec.json.decode(path.read_bytes(), type=list[TableEvent])
    views = [view for hand in hands_of(stored) for view in readers(hand)]
    results = assert_same_verdicts(page, views)
    assert all(r["ok"] and r["format"] == 1 and r["committed"] for r in results)


# --- forgeries -------------------------------------------------------------------------------


def first(events: list[dict], kind: str) -> dict:
    return next(e for e in events if e["type"] == kind)


def up_card(events: list[dict]) -> list:
    """The first up card of the first deal (a DealtCard as JSON)."""
    return next(d for d in first(events, "CardsDealt")["cards"] if d[2])


def b64_changed(text: str, at: int = 0) -> str:
    raw = bytearray(base64.b64decode(text))
    raw[at] ^= 1
    return base64.b64encode(bytes(raw)).decode()


def swap_card(events):
    dealt = up_card(events)
    dealt[1] = "As" if dealt[1] != "As" else "Ks"
    return dealt[1]


def change_salt(events):
    dealt = up_card(events)
    dealt[3]["salt"] = b64_changed(dealt[3]["salt"], 5)
    return dealt[1]


def change_place(events):
    dealt = up_card(events)
    dealt[3]["place"] += 1
    return dealt[1]


def change_path(events):
    dealt = up_card(events)
    dealt[3]["path"] = b64_changed(dealt[3]["path"], 40) if dealt[3]["path"] else base64.b64encode(bytes(32)).decode()
    return dealt[1]


def change_shown_card(events):
    shown = first(events, "HandShown")
    shown["cards"][0], shown["cards"][1] = shown["cards"][1], shown["cards"][0]
    return shown["cards"][0]


def change_leaf(events):
    collected = first(events, "AntesCollected")
    collected["deck_leaves"] = b64_changed(collected["deck_leaves"], 40)


def change_root(events):
    first(events, "AntesCollected")["deck_root"] = "00" * 32


def change_format(events):
    collected = first(events, "AntesCollected")
    collected["deck_format"] = 1 if collected.get("deck_format", 1) == 2 else 2


def drop_leaf(events):
    collected = first(events, "AntesCollected")
    collected["deck_leaves"] = base64.b64encode(base64.b64decode(collected["deck_leaves"])[:-32]).decode()


@pytest.mark.parametrize("forge, named", [
    (swap_card, "does not open the commitment"), (change_salt, "does not open the commitment"),
    (change_place, "does not open the commitment"), (change_path, "does not open the commitment"),
    (change_shown_card, "does not open the commitment"),
    (change_leaf, "the published leaves do not make the root"),
    (change_root, "the published leaves do not make the root"),
    (change_format, "the commitment does not hold together"),
    (drop_leaf, "leaves published for"),
])
@pytest.mark.parametrize("format", [1, 2])
def test_R32_a_forged_hand_fails_in_the_browser_naming_the_card(page, forge, named, format):
    if format == 1:
        stored = msgspec.json.decode(FORMAT_1[1].read_bytes(), type=list[TableEvent])
        hand = next(h for h in hands_of(stored) if any(isinstance(e, HandShown) for e in h))
    else:
        hand = next(h for h in simulated(3, 30, seed=11) if any(isinstance(e, HandShown) for e in h))
    if format == 1 and forge in (change_leaf, drop_leaf):
        leaves = base64.b64encode(bytes(64)).decode()      # format 1 publishes none: any is wrong
        named = "is not one this verifier knows"
        events = msgspec.to_builtins(hand)
        first(events, "AntesCollected")["deck_leaves"] = leaves
        card = None
    else:
        if format == 1 and forge is change_root:
            named = "does not open the commitment"                  # format 1: no leaves to check the root by
        events = msgspec.to_builtins(hand)
        card = forge(events)
    (result,) = assert_same_verdicts(page, [events])
    assert not result["ok"] and any(named in f["message"] for f in result["failures"])
    if card is not None:
        assert any(f.get("card") == card and named in f["message"] for f in result["failures"])


def test_R32_unreadable_events_are_a_failure_not_an_exception(page):
    hand = msgspec.to_builtins(simulated(2, 1, seed=2)[0])
    no_street = [{k: v for k, v in e.items() if k != "street"} if e["type"] == "CardsDealt" else e for e in hand]
    results = check(page, [[], no_street, hand + hand, "not a list"])
    assert [r["ok"] for r in results] == [False] * 4
    assert [r["failures"][0]["message"].split(":")[0] for r in results] == [
        "no hand in these events", "the hand cannot be read", "2 hands where one was expected",
        "no hand in these events"]


def test_R32_a_hand_without_a_commitment_has_nothing_to_check(page):
    """A live dealer's physical deck commits nothing (deck_root ""): nothing opens, nothing fails."""
    hand = msgspec.to_builtins(simulated(3, 1, seed=6)[0])
    first(hand, "AntesCollected").update(deck_root="", deck_size=0, deck_leaves="")
    (result,) = assert_same_verdicts(page, [hand])
    assert result == {"ok": True, "hand_no": 1, "checked": 0, "committed": False, "format": 2, "failures": []}


BASE64 = ["QQ==", "QQ=", "Q===", "QUJD", "QUJDRA", "QQ==QUJD", "Q=Q=", "QU=JD", "QUJ D", "Q", "QUJDR===", "QR==",
          "=QUJD", "QQ=x=", "QUJD=", "QUJD===", "QQ===", "", "====", "QQ==\n", "QUJD\n", "é", "QU JD+/==", "////"]


def test_base64_decodes_exactly_as_pythons_b64decode(page):
    """The verifier decodes leaves strictly (validate=True), salts and paths leniently:
    proofs.js accepts and refuses the same strings, to the same bytes."""
    def python(text: str, strict: bool) -> list[int] | None:
        try:
            return list(base64.b64decode(text, validate=strict))
        except ValueError:
            return None

    got = page.evaluate("""async (texts) => {
      const { b64decode } = await import("/js/proofs.js");
      const one = (t, strict) => { try { return Array.from(b64decode(t, strict)); } catch (e) { return null; } };
      return texts.map((t) => [one(t, false), one(t, true)]);
    }""", BASE64)
    assert got == [[python(t, False), python(t, True)] for t in BASE64]


def test_R32_a_players_messages_with_versions_verify_hand_by_hand(page):
    """What a player received live (public copies and his private ones, each with its
    version, in any order): eventsOf merges them as the verifier's events_of does."""
    table, stream = new_table("seven_card_stud", 3)
    rng = random.Random(21)
    for _ in range(4):
        stream += play_hand(table, rng, timeout_rate=0.05)
    got = [{"version": v, "event": msgspec.to_builtins(views.public(e))} for v, e in enumerate(stream, 1)]
    got += [{"version": v, "event": msgspec.to_builtins(copy)} for v, e in enumerate(stream, 1)
            if 1 in views.owners_of_private_cards(e) and (copy := views.private(e, 1)) is not None]
    random.Random(1).shuffle(got)
    results = page.evaluate("""async (messages) => {
      const { eventsOf, verifyHands } = await import("/js/proofs.js");
      return verifyHands(eventsOf(messages));
    }""", got)
    hands = verify_deck.verify(verify_deck.events_of(got))
    assert [(r["hand_no"], r["checked"], [f["message"] for f in r["failures"]]) for r in results] == [
        (h.number, h.proofs, h.problems) for h in hands]
    assert len(results) == 4 and all(r["ok"] for r in results)
