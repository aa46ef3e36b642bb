"""The standalone verifier (verifier/verify_deck.py), run as a player would run it on
his own messages: honest hands pass, in both formats of the commitment (hands stored in
format 1 before format 2 existed too); a swapped card, a changed salt, a card from
another place or published leaves that do not make the root fail, naming it; it needs
nothing but Python's standard library."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from studroom.domain import views
from studroom.domain.events import AntesCollected, CardsDealt, DealtCard, Event, TableEvent
from studroom.domain.simulate import new_table, play_hand

VERIFIER = Path(__file__).resolve().parents[2] / "verifier" / "verify_deck.py"


def table_stream(players: int, count: int, seed: int) -> list[Event]:
    table, events = new_table("seven_card_stud", players)
    rng = random.Random(seed)
    for _ in range(count):
        events += play_hand(table, rng, timeout_rate=0.05)
    return events


def messages(events: list[Event], seat: int) -> list[dict]:
    """What the player in ``seat`` received: public copies and his private ones, with versions."""
    got = [{"version": v, "event": msgspec.to_builtins(views.public(e))} for v, e in enumerate(events, 1)]
    got += [{"version": v, "event": msgspec.to_builtins(copy)} for v, e in enumerate(events, 1)
            if seat in views.owners_of_private_cards(e) and (copy := views.private(e, seat)) is not None]
    random.Random(seat).shuffle(got)
    return got


def verify(tmp_path: Path, data: object) -> subprocess.CompletedProcess:
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return subprocess.run([sys.executable, "-I", str(VERIFIER), str(path)], capture_output=True, text=True)


def test_R32_the_verifier_uses_the_standard_library_only():
    tree = ast.parse(VERIFIER.read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}


@pytest.mark.parametrize("players", [2, 8])
def test_R32_each_players_messages_of_honest_hands_verify(tmp_path, players):
    events = table_stream(players, 20, seed=players)
    for seat in range(players):
        run = verify(tmp_path, messages(events, seat))
        assert run.returncode == 0, run.stdout + run.stderr
        lines = run.stdout.splitlines()
        assert len(lines) == 20 and all(" ok, " in line for line in lines)
    public = [msgspec.to_builtins(views.public(e)) for e in events]      # a spectator's list of events
    assert verify(tmp_path, public).returncode == 0


def _forged(events: list[Event], seat: int, forge) -> list[dict]:
    """The player's messages with the first up card of street 1 changed by ``forge``."""
    got = messages(events, seat)
    for message in sorted(got, key=lambda m: m["version"]):
        event = msgspec.convert(message["event"], CardsDealt) if message["event"]["type"] == "CardsDealt" else None
        if event is not None and event.street == 1:
            event = msgspec.structs.replace(event, cards=forge(event.cards))
            message["event"] = msgspec.to_builtins(event)
            return got
    raise AssertionError("no street 1")


def test_R32_a_swapped_card_is_rejected_and_named(tmp_path):
    events = table_stream(3, 1, seed=5)
    first: list[DealtCard] = []

    def swap(cards: list[DealtCard]) -> list[DealtCard]:
        first.append(cards[0])
        forged = "As" if cards[0].card != "As" else "Ks"
        return [DealtCard(cards[0].seat, forged, True, cards[0].proof)] + cards[1:]

    run = verify(tmp_path, _forged(events, 0, swap))
    assert run.returncode == 1
    (d,) = first
    assert f"street 1, seat {d.seat}: " in run.stdout and "does not open the commitment" in run.stdout


def test_R32_a_changed_salt_is_rejected(tmp_path):
    events = table_stream(3, 1, seed=5)

    def resalt(cards: list[DealtCard]) -> list[DealtCard]:
        d = cards[0]
        return [DealtCard(d.seat, d.card, d.up, msgspec.structs.replace(d.proof, salt=bytes(16)))] + cards[1:]

    run = verify(tmp_path, _forged(events, 1, resalt))
    assert run.returncode == 1 and "does not open the commitment" in run.stdout


def test_R32_a_card_from_another_place_is_rejected(tmp_path):
    events = table_stream(3, 1, seed=5)

    def exchange(cards: list[DealtCard]) -> list[DealtCard]:
        a, b = cards[:2]
        return [DealtCard(a.seat, b.card, a.up, b.proof), DealtCard(b.seat, a.card, b.up, a.proof)] + cards[2:]

    run = verify(tmp_path, _forged(events, 2, exchange))
    assert run.returncode == 1 and "but was dealt from place" in run.stdout


@pytest.mark.parametrize("content", ["{not json", "[]", '{"a": 1}'])
def test_unreadable_input_is_one_line_and_exit_code_2(tmp_path, content):
    path = tmp_path / "messages.json"
    path.write_text(content, encoding="utf-8")
    run = subprocess.run([sys.executable, "-I", str(VERIFIER), str(path)], capture_output=True, text=True)
    assert run.returncode == 2 and len(run.stderr.splitlines()) == 1 and "Traceback" not in run.stderr


# ------------------------------------------------------------------ both formats of the commitment

FORMAT_1 = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "deck_v1").glob("*.json"))


def stored(path: Path) -> list[Event]:
    return msgspec.json.decode(path.read_bytes(), type=list[TableEvent])


@pytest.mark.parametrize("path", FORMAT_1, ids=lambda p: p.stem)
def test_R32_hands_stored_in_format_1_still_verify_for_every_reader(tmp_path, path):
    """Hands committed with the Merkle root before format 2 existed (no deck_format)."""
    events = stored(path)
    assert all(e.deck_format == 1 and e.deck_leaves == b"" for e in events if isinstance(e, AntesCollected))
    seats = sorted({d.seat for e in events if isinstance(e, CardsDealt) for d in e.cards})
    for reader in [None, *seats]:
        data = ([msgspec.to_builtins(views.public(e)) for e in events] if reader is None
                else messages(events, reader))
        run = verify(tmp_path, data)
        assert run.returncode == 0 and " ok, " in run.stdout, (reader, run.stdout + run.stderr)


def test_R32_new_hands_are_format_2_and_verify(tmp_path):
    events = table_stream(2, 5, seed=9)
    collected = [e for e in events if isinstance(e, AntesCollected)]
    assert collected and all(e.deck_format == 2 and len(e.deck_leaves) == 32 * e.deck_size == 32 * 18
                             for e in collected)
    run = verify(tmp_path, messages(events, 1))
    assert run.returncode == 0 and run.stdout.count(" ok, ") == 5


@pytest.mark.parametrize("forge, named", [
    (lambda e: msgspec.structs.replace(e, deck_leaves=e.deck_leaves[:32] + bytes(32) + e.deck_leaves[64:]),
     "the published leaves do not make the root"),
    (lambda e: msgspec.structs.replace(e, deck_root="00" * 32), "the published leaves do not make the root"),
    (lambda e: msgspec.structs.replace(e, deck_leaves=e.deck_leaves[:-32]), "17 leaves published for 18 places"),
    (lambda e: msgspec.structs.replace(e, deck_format=3), "format 3"),
])
def test_R32_format_2_leaves_that_do_not_hold_together_are_rejected(tmp_path, forge, named):
    events = [forge(e) if isinstance(e, AntesCollected) else e for e in table_stream(2, 1, seed=4)]
    run = verify(tmp_path, messages(events, 0))
    assert run.returncode == 1 and "the commitment does not hold together" in run.stdout and named in run.stdout
