"""The compiled domain (mypyc, setup.py) and its pure Python source are the same rules:
the same random hands and the same golden scenario files give byte-identical output."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

import studroom.domain as domain

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"

# plays a fixed set of random hands (all games, 2 and max seats, some timeouts) and
# every golden scenario file (errors and refusals included), and prints a digest of
# all the output, and where the rule modules came from
PLAY = """
import hashlib, json, pathlib, random, sys
import msgspec
import studroom.domain.table
from studroom.domain.scenario import ScriptError, play
from studroom.domain.simulate import new_table, play_hand, top_up

digest = hashlib.sha256()
for game, seats in (("seven_card_stud", 2), ("seven_card_stud", 8), ("seven_card_stud_hilo", 2),
                    ("seven_card_stud_hilo", 8), ("five_card_stud", 2), ("five_card_stud", 10)):
    table, events = new_table(game, seats, stack=300)
    rng = random.Random(f"{game}/{seats}")
    for _ in range(40):
        events += top_up(table, 300)
        events += play_hand(table, rng, timeout_rate=0.05)
    digest.update(msgspec.json.encode(events))
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    try:
        out = play(json.loads(path.read_text())["scenario"])
    except ScriptError as refused:
        out = {"error": str(refused)}
    digest.update(msgspec.json.encode(out))
print(digest.hexdigest())
print(studroom.domain.table.__file__)
"""


def _play(pure: bool) -> tuple[str, str]:
    env = dict(os.environ)
    env.pop("STUDROOM_PURE_PYTHON", None)
    if pure:
        env["STUDROOM_PURE_PYTHON"] = "1"
    out = subprocess.run([sys.executable, "-c", PLAY, str(SCENARIOS)], env=env, capture_output=True,
                         text=True, check=True)
    digest, origin = out.stdout.split()
    return digest, origin


def test_compiled_and_pure_rules_give_identical_events():
    pure_digest, pure_origin = _play(pure=True)
    default_digest, default_origin = _play(pure=False)
    assert pure_origin.endswith("table.py")
    if domain.COMPILED:               # built with a compiler (make always tries): compare
        assert not default_origin.endswith(".py")
    assert default_digest == pure_digest


def test_the_running_rules_are_the_compiled_ones_when_built():
    """``COMPILED`` tells the truth about every rule module."""
    for name in domain.NATIVE_MODULES:
        module = importlib.import_module(f"studroom.domain.{name}")
        assert module.__file__ is not None
        assert module.__file__.endswith(".py") != domain.COMPILED, name


def test_a_source_newer_than_its_compiled_copy_runs_pure():
    """An edited rule never runs as its stale compiled copy."""
    if not domain.COMPILED:
        return                          # nothing compiled, nothing can be stale
    source = os.path.join(os.path.dirname(domain.__file__), "pots.py")
    stat = os.stat(source)
    try:
        os.utime(source, (stat.st_atime, time.time() + 3600))   # newer than any build of today
        out = subprocess.run(
            [sys.executable, "-W", "always", "-c",
             "import studroom.domain as d, studroom.domain.pots as p; print(d.COMPILED, p.__file__)"],
            capture_output=True, text=True, check=True,
        )
    finally:
        os.utime(source, (stat.st_atime, stat.st_mtime))
    compiled, origin = out.stdout.split()
    assert compiled == "False" and origin.endswith("pots.py")
    assert "newer than its compiled copy" in out.stderr


def test_records_built_and_deep_copied_from_interpreted_code_are_whole():
    """The state objects work the same from interpreted callers (tests, tools) as from
    the compiled rules, and a deep copy (the table's snapshots) is equal but separate."""
    import copy

    from studroom.domain.deck import CommittedDeck, ListedDeck
    from studroom.domain.hand import HandPlayer, HandState
    from studroom.domain.table import SeatState, _plain

    player = HandPlayer(3, "ann", 100)
    player.cards.append(7)
    records = [SeatState("ann", True), player, HandState(1, 0, [player]),
               ListedDeck([1, 2, 3]), CommittedDeck(b"seed"), CommittedDeck(b"seed", [5, 3, 1])]
    for record in records:
        twin = copy.deepcopy(record)
        assert type(twin) is type(record) and twin is not record
        assert _plain(twin) == _plain(record)
    deck = CommittedDeck(b"seed")
    deck.root()                                   # worked out: the copy carries it along
    twin = copy.deepcopy(deck)
    assert twin.cards(0, 5) == deck.cards(0, 5) and twin.root() == deck.root()
    assert twin.proof(deck.cards(0, 1)[0]) == deck.proof(deck.cards(0, 1)[0])
    assert copy.deepcopy(player).cards is not player.cards
