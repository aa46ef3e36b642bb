"""Golden scenarios: one scripted hand per file in ``tests/scenarios/``, results computed by hand.

Each file names the rules it proves (``"rules": ["R7", "R8"]``, also in the file name, so
the rule ids appear in the test ids) and says why in one sentence.  ``expect`` holds
either the ``error`` the script must stop with, or the hand-computed ``result``: only the
keys given are compared, each one exactly (pots in order, main pot first; amounts before
rake, winners' chips after rake).  ``expect_events_include`` (inside ``expect`` or at the
top level) lists event types that must occur.

For every finished result the test also checks the bookkeeping: the net results sum to
minus the rake, and every final stack is the starting stack plus its net result.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
FILES = sorted(SCENARIOS.glob("*.json"))


def _load(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def _wire(value):
    """The engine's output as it would travel as JSON (int map keys become strings)."""
    return json.loads(json.dumps(value))


def _play(scenario: dict) -> dict:
    from studroom.domain.scenario import play

    return _wire(play(copy.deepcopy(scenario)))


def test_there_are_golden_scenarios():
    assert len(FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario_file_is_well_formed(path: Path):
    spec = _load(path)
    assert set(spec) <= {"rules", "why", "scenario", "expect", "expect_events_include"}
    assert spec["rules"] and all(r.startswith("R") for r in spec["rules"])
    assert spec["why"]
    expect = spec["expect"]
    assert ("error" in expect) != ("result" in expect), "expect exactly one of error / result"
    deck = spec["scenario"].get("deck")
    if deck and "error" not in expect:
        assert len(set(deck)) == len(deck)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_scenario(path: Path):
    spec = _load(path)
    scenario, expect = spec["scenario"], spec["expect"]
    out = _play(scenario)

    if "error" in expect:
        assert "error" in out, f"expected error {expect['error']}, got result {out.get('result')}"
        got = out["error"]
        for key, want in expect["error"].items():
            assert got.get(key) == want, f"error.{key}: want {want!r}, got {got.get(key)!r} ({got})"
    else:
        assert "error" not in out, f"unexpected error {out.get('error')}"
        result = out["result"]
        for key, want in expect["result"].items():
            assert key in result, f"result has no {key!r}"
            assert result[key] == want, f"result.{key}:\n want {json.dumps(want)}\n  got {json.dumps(result[key])}"

        # bookkeeping invariants
        rake = sum(p["rake"] for p in result["pots"])
        assert sum(result["net"].values()) == -rake
        start = {str(s["seat"]): s["stack"] for s in scenario["seats"]}
        assert set(result["stacks"]) == set(start)
        for seat, stack in start.items():
            assert result["stacks"][seat] == stack + result["net"][seat], f"seat {seat}"

    wanted = expect.get("expect_events_include", []) + spec.get("expect_events_include", [])
    if wanted:
        types = {e.get("type") for e in out.get("events", [])}
        missing = [t for t in wanted if t not in types]
        assert not missing, f"events missing: {missing}"
