"""Scripts are read strictly (domain/scenario.py): a key nobody knows, anywhere, or a
value of the wrong type is a ``bad_scenario`` error that says where; R5's cancelled
hand has its own outcome."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from studroom.domain.scenario import play

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
BASE = json.loads((SCENARIOS / "R13_check_raise.json").read_text(encoding="utf-8"))["scenario"]


def changed(path: tuple, value: object) -> dict:
    """The check-raise script with ``value`` put at ``path`` (keys and list indexes)."""
    script = copy.deepcopy(BASE)
    script.setdefault("rake", {"percent": 5, "cap": 100})
    script.setdefault("live_dealer", None)
    *parents, last = path
    target = script
    for key in parents:
        target = target[key]
    target[last] = value
    return script


@pytest.mark.parametrize("path, value, where", [
    (("timeout_polcy",), "check_or_fold", "`timeout_polcy`"),
    (("rake", "capp"), 5, "`capp` - at `$.rake`"),
    (("stakes", "antes"), 5, "`antes` - at `$.stakes`"),
    (("seats", 1, "chips"), 5, "`chips` - at `$.seats[1]`"),
    (("actions", 2, "amount"), 20, "`amount` - at `$.actions[2]`"),
    (("live_dealer",), {"exposed": [], "mixd": True}, "`mixd` - at `$.live_dealer`"),
])
def test_an_unknown_key_anywhere_is_a_bad_scenario_naming_it(path, value, where):
    out = play(changed(path, value))
    assert out == {"error": {"code": "bad_scenario", "message": f"Object contains unknown field {where}",
                             "action_index": None}}


@pytest.mark.parametrize("path, value, where", [
    (("seats", 0, "stack"), "1000", "$.seats[0].stack"),
    (("button",), 1.5, "$.button"),
    (("deck",), "Kd 2c", "$.deck"),
    (("actions", 0, "seat"), "two", "$.actions[0].seat"),
    (("stakes", "ante"), True, "$.stakes.ante"),
    (("timeout_policy",), "fold_always", "$.timeout_policy"),
])
def test_a_value_of_the_wrong_type_is_a_bad_scenario_naming_where(path, value, where):
    error = play(changed(path, value))["error"]
    assert error["code"] == "bad_scenario" and error["message"].endswith(f"at `{where}`")


@pytest.mark.parametrize("script", [[], "a hand", 7, None, {"game": "seven_card_stud"}])
def test_a_script_that_is_no_scenario_at_all_is_a_bad_scenario(script):
    assert play(script)["error"]["code"] == "bad_scenario"


def test_the_script_with_every_optional_key_given_still_plays():
    assert play(changed(("timeout_policy",), "check_or_fold"))["result"]["ended_on"] == "fold"


def test_R05_a_cancelled_hand_ends_on_cancelled_with_every_stack_as_it_was():
    out = play(json.loads((SCENARIOS / "R05_fewer_than_two_antes_cancels_the_hand.json")
                          .read_text(encoding="utf-8"))["scenario"])
    result = out["result"]
    assert result == {"stacks": {"0": 1000, "1": 1000, "2": 400}, "net": {"0": 0, "1": 0, "2": 0}, "pots": [],
                      "community": [], "shown": {}, "ended_on": "cancelled"}
    assert [e["type"] for e in out["events"]][-1] == "HandCancelled"
    assert not any(e["type"] == "CardsDealt" for e in out["events"])


def test_a_scripted_deck_with_a_seed_keeps_the_seed_in_the_record_for_its_reshuffles():
    script = json.loads((SCENARIOS / "R17_seven_players_burns_reshuffled_before_the_river.json")
                        .read_text(encoding="utf-8"))["scenario"]
    started = play(script)["events"][0]
    assert started["deck"] == script["deck"] and started["seed"] == script["seed"]
