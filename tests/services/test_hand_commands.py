"""`studroom hand play` and `studroom hand audit` (services/cli/main.py) as a person runs
them (their ``main``, in the test's process: tests/in_process.py): a missing file or bad
JSON is one line on stderr and exit code 2, never a traceback; an audit passes an honest table's stream (hands stored in the commitment's
format 1 too) and fails a tampered one."""

from __future__ import annotations

import json
import random
from pathlib import Path

import msgspec
import pytest
from in_process import Ran
from in_process import studroom as run_studroom

from studroom.domain import views
from studroom.domain.simulate import new_table, play_hand

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def studroom(*args: str) -> Ran:
    return run_studroom(["hand", *args])


def scenario_file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(json.loads((SCENARIOS / f"{name}.json").read_text())["scenario"]))
    return path


@pytest.mark.parametrize("command", ["play", "audit"])
def test_a_missing_file_is_one_line_on_stderr_and_exit_code_2(tmp_path, command):
    run = studroom(command, str(tmp_path / "nowhere.json"))
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [f"studroom hand {command}: cannot read {tmp_path / 'nowhere.json'}: "
                                       "No such file or directory"]


@pytest.mark.parametrize("command", ["play", "audit"])
def test_bad_json_is_one_line_on_stderr_and_exit_code_2(tmp_path, command):
    path = tmp_path / "bad.json"
    path.write_text('{"game": "seven_card_stud",')
    run = studroom(command, str(path))
    assert run.returncode == 2 and run.stdout == "" and len(run.stderr.splitlines()) == 1
    assert run.stderr.startswith(f"studroom hand {command}: {path} is not JSON")


def test_an_unknown_key_in_a_script_is_a_bad_scenario_with_exit_code_2(tmp_path):
    path = scenario_file(tmp_path, "R13_check_raise")
    script = json.loads(path.read_text())
    script["rake"] = {"capp": 5}
    path.write_text(json.dumps(script))
    run = studroom("play", str(path))
    assert run.returncode == 2 and json.loads(run.stdout)["error"]["code"] == "bad_scenario"


def test_R32_hand_play_output_audits_clean_and_a_swapped_card_does_not(tmp_path):
    played = studroom("play", str(scenario_file(tmp_path, "R22_R26_mucked_best_hands_give_up_main_and_side_pot")))
    assert played.returncode == 0
    output = tmp_path / "played.json"
    output.write_text(played.stdout)
    run = studroom("audit", str(output))
    assert run.returncode == 0 and json.loads(run.stdout)[0]["fair"] is True
    data = json.loads(played.stdout)
    dealt = next(e for e in data["events"] if e["type"] == "CardsDealt" and e["street"] == 1)
    dealt["cards"][0][1] = "As" if dealt["cards"][0][1] != "As" else "Ks"
    output.write_text(json.dumps(data))
    run = studroom("audit", str(output))
    assert run.returncode == 1 and "does not open the commitment" in run.stdout


def test_R32_a_whole_tables_stream_and_a_players_messages_audit_clean(tmp_path):
    table, events = new_table("seven_card_stud", 6)
    rng = random.Random(4)
    for _ in range(15):
        events += play_hand(table, rng)
    stored = tmp_path / "table.json"
    stored.write_bytes(msgspec.json.encode(events))
    run = studroom("audit", str(stored))
    assert run.returncode == 0 and [a["hand_no"] for a in json.loads(run.stdout)] == list(range(1, 16))
    mine = [{"version": v, "event": views.public(e)} for v, e in enumerate(events, 1)]
    mine += [{"version": v, "event": copy} for v, e in enumerate(events, 1)
             if 3 in views.owners_of_private_cards(e) and (copy := views.private(e, 3)) is not None]
    messages = tmp_path / "messages.json"
    messages.write_bytes(msgspec.json.encode(mine))
    assert studroom("audit", str(messages)).returncode == 0


@pytest.mark.parametrize("path", sorted((SCENARIOS.parent / "fixtures" / "deck_v1").glob("*.json")),
                         ids=lambda p: p.stem)
def test_R32_hands_stored_in_the_commitments_format_1_audit_clean(path):
    """Hands stored before format 2 (their AntesCollected has no deck_format)."""
    run = studroom("audit", str(path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert all(a["fair"] and a["cards"] > 0 for a in json.loads(run.stdout))


def test_an_audit_of_something_that_is_no_stream_of_hands_is_exit_code_2(tmp_path):
    for content in ('{"rules": []}', "[]", '[{"type": "Nothing"}]'):
        path = tmp_path / "x.json"
        path.write_text(content)
        run = studroom("audit", str(path))
        assert run.returncode == 2 and len(run.stderr.splitlines()) == 1, (content, run.stderr)
