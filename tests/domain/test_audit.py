"""R32: the audit of any stream of a table's events (domain/audit.py).  Honest tables
audit clean however they are read (the dealer's record, the public stream, a player's
messages, many hands at once); each kind of tampering is found and named."""

from __future__ import annotations

import json
import random
from pathlib import Path

import msgspec
import pytest

from studroom.domain import views
from studroom.domain.audit import audit, audit_hand, hands, merged, stream
from studroom.domain.commands import BuyIn, DealStreet, OpenTable, PostAnte, SitDown, StartHand
from studroom.domain.config import TableConfig
from studroom.domain.events import (
    AntePosted, AntesCollected, CardsDealt, DealtCard, Event, HandShown, HandStarted, TableEvent,
)
from studroom.domain.scenario import play
from studroom.domain.simulate import STAKES, new_table, play_hand
from studroom.domain.table import Table

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def table_stream(game: str, players: int, count: int, seed: int, **config: object) -> list[Event]:
    """A table's stored events: ``count`` random hands after the seating."""
    table, events = new_table(game, players, **config)
    rng = random.Random(seed)
    for _ in range(count):
        events += play_hand(table, rng, timeout_rate=0.05)
    return events


def seen_by(events: list[Event], seat: int) -> list[Event]:
    """What the player in ``seat`` got: every public copy and his private ones, merged."""
    copies = [(v, views.public(e)) for v, e in enumerate(events)]
    copies += [(v, copy) for v, e in enumerate(events) if (copy := views.private(e, seat)) is not None]
    random.Random(seat).shuffle(copies)                  # as they came: any order
    return merged(copies)


def table_without_auto_antes(players: int) -> tuple[Table, list[Event]]:
    """Players who post their antes themselves (with entropy, if they like)."""
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    for seat in range(players):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}", auto_ante=False))
        events += table.execute(BuyIn(seat=seat, amount=2000))
    return table, events


def findings(events: list[Event]) -> list[str]:
    return [f for a in audit(events) for f in a.findings]


def one_hand(players: int = 4, seed: int = 6) -> list[Event]:
    return hands(table_stream("seven_card_stud", players, 1, seed))[0]


def street(events: list[Event], number: int) -> int:
    return next(i for i, e in enumerate(events) if isinstance(e, CardsDealt) and e.street == number)


# ------------------------------------------------------------------ honest streams


@pytest.mark.parametrize("game, players", [("seven_card_stud", 8), ("seven_card_stud_hilo", 4),
                                           ("five_card_stud", 10), ("seven_card_stud", 2)])
def test_R32_a_whole_honest_table_audits_clean_however_it_is_read(game, players):
    """Many hands in one stream (R17 reshuffles at 8 and 10 players), read as the
    dealer's record, the public stream, and each player's messages."""
    events = table_stream(game, players, 30, seed=players)
    record = audit(events)
    assert len(record) == 30 and [a.findings for a in record] == [[]] * 30
    assert all(a.cards > 0 and a.proofs > 0 for a in record)          # the seed re-derived every card
    public = audit([views.public(e) for e in events])
    assert [a.findings for a in public] == [[]] * 30 and sum(a.cards for a in public) == 0
    for seat in range(players):
        mine = audit(seen_by(events, seat))
        assert [a.findings for a in mine] == [[]] * 30
        assert sum(a.proofs for a in mine) > sum(a.proofs for a in public)   # his own down cards


def test_R32_every_golden_hand_audits_clean():
    """Scripted decks (short ones too), R17 reshuffles and community cards, R28 live
    dealers' exposed cards, mucks."""
    checked = 0
    for path in sorted(SCENARIOS.glob("*.json")):
        out = play(json.loads(path.read_text(encoding="utf-8"))["scenario"])
        if "events" in out:
            for a in audit(stream(out)):
                assert a.fair, (path.stem, a.findings)
                checked += 1
    assert checked >= 50


def test_R32_a_stream_that_begins_or_ends_mid_hand_audits_what_it_holds():
    events = table_stream("seven_card_stud", 3, 3, seed=4)
    starts = [i for i, e in enumerate(events) if isinstance(e, HandStarted)]
    cut = events[starts[0] + 12 : starts[2] + 15]             # from inside hand 1 into hand 3
    assert [a.hand_no for a in audit(cut)] == [2, 3] and findings(cut) == []


def test_R32_a_players_entropy_audits_with_the_dealers_record():
    table, events = table_without_auto_antes(3)
    events += table.execute(StartHand(seed="cd" * 32))
    for seat, entropy in enumerate(["01", None, "ff" * 32]):
        events += table.execute(PostAnte(seat=seat, entropy=entropy))
    (checked,) = audit(events)
    assert checked.fair and checked.cards > 0


# ------------------------------------------------------------------ tampering, found and named


def test_R32_a_swapped_card_is_named_in_the_record_and_in_the_public_stream():
    events = one_hand()
    i = street(events, 1)
    first = events[i].cards[0]
    forged = "As" if first.card != "As" else "Ks"
    events[i] = msgspec.structs.replace(events[i], cards=[DealtCard(first.seat, forged, True, first.proof)]
                                        + events[i].cards[1:])
    found = findings(events)
    assert f"hand 1: street 1: seat {first.seat}: {forged} does not open the commitment at place " \
           f"{first.proof.place}" in found
    assert f"hand 1: street 1: seat {first.seat} got {forged}, the deck says {first.card}" in found
    public = findings([views.public(e) for e in events])
    assert public[0] == (f"hand 1: street 1: seat {first.seat}: {forged} does not open the commitment at place "
                         f"{first.proof.place}")
    assert all(f"seat {first.seat}" in f for f in public)      # (and if he showed: not what he was dealt)


def test_R32_a_changed_salt_is_named():
    events = one_hand()
    i = street(events, 0)
    d = events[i].cards[-1]
    salt = bytes(b ^ 1 for b in d.proof.salt)
    forged = DealtCard(d.seat, d.card, d.up, msgspec.structs.replace(d.proof, salt=salt))
    events[i] = msgspec.structs.replace(events[i], cards=events[i].cards[:-1] + [forged])
    assert findings(events) == [f"hand 1: street 0: seat {d.seat}: {d.card} does not open the commitment "
                                f"at place {d.proof.place}"]


def test_R32_a_card_from_another_place_of_the_deck_is_named():
    """Both cards open the commitment, but neither where it was dealt: the dealer chose."""
    events = one_hand()
    i = street(events, 1)
    a, b = events[i].cards[:2]
    swapped = [DealtCard(a.seat, b.card, a.up, b.proof), DealtCard(b.seat, a.card, b.up, a.proof)]
    events[i] = msgspec.structs.replace(events[i], cards=swapped + events[i].cards[2:])
    found = [f for f in findings([views.public(e) for e in events]) if "proven at place" in f]
    assert found == [
        f"hand 1: street 1: seat {a.seat}: {b.card} is proven at place {b.proof.place}, but dealt from place "
        f"{a.proof.place}",
        f"hand 1: street 1: seat {b.seat}: {a.card} is proven at place {a.proof.place}, but dealt from place "
        f"{b.proof.place}",
    ]


def test_R32_reordered_streets_are_named():
    events = one_hand(players=2, seed=3)
    while not any(isinstance(e, CardsDealt) and e.street == 2 for e in events):
        events = one_hand(players=2, seed=len(events))
    one, two = street(events, 1), street(events, 2)
    events[one], events[two] = events[two], events[one]
    found = findings(events)
    assert "hand 1: street 2 was dealt after street 0" in found
    assert "hand 1: street 1 was dealt after street 2" in found


def test_R32_cards_dealt_before_the_commitment_are_named():
    events = one_hand()
    committed, first = next(i for i, e in enumerate(events) if isinstance(e, AntesCollected)), street(events, 0)
    events.insert(first, events.pop(committed))
    assert "hand 1: street 0 was dealt before the deck was committed" in findings(events)


def test_R32_a_seed_that_is_not_the_committed_one_is_named():
    events = one_hand()
    events[0] = msgspec.structs.replace(events[0], seed="00" * 32)
    found = findings(events)
    assert found[:2] == ["hand 1: the seed does not match the hash published when the hand started",
                         "hand 1: the deck derived from the seed is not the one committed to"]


def test_R32_changed_entropy_is_named():
    table, events = table_without_auto_antes(2)
    start = len(events)
    events += table.execute(StartHand(seed="cd" * 32))
    events += table.execute(PostAnte(seat=0, entropy="aa"))
    events += table.execute(PostAnte(seat=1))
    i = next(i for i, e in enumerate(events) if isinstance(e, AntePosted) and e.entropy)
    events[i] = msgspec.structs.replace(events[i], entropy="ab")
    assert "hand 1: the deck derived from the seed is not the one committed to" in findings(events[start:])


def test_R32_a_shown_hand_that_was_not_dealt_is_named():
    table, _ = new_table("seven_card_stud", 2)
    rng = random.Random(8)
    events = play_hand(table, rng)
    while not any(isinstance(e, HandShown) for e in events):
        events = play_hand(table, rng)
    i = next(i for i, e in enumerate(events) if isinstance(e, HandShown))
    shown = events[i]
    cards, proofs = list(shown.cards), list(shown.proofs)
    cards[0], cards[1], proofs[0], proofs[1] = cards[1], cards[0], proofs[1], proofs[0]
    events[i] = msgspec.structs.replace(shown, cards=cards, proofs=proofs)
    assert any(f.startswith(f"hand {shown_hand(events)}: seat {shown.seat} showed {cards}, but was dealt")
               for f in findings(events))


def shown_hand(events: list[Event]) -> int:
    return next(e.hand_no for e in events if isinstance(e, HandStarted))


def test_R32_a_live_dealers_hand_has_nothing_to_prove_and_audits_clean():
    table, events = new_table("seven_card_stud", 3, auto_deal=False)
    events += table.execute(StartHand())
    events += table.execute(DealStreet(cards=["2c", "3c", "4c", "5c", "6c", "7c", "8c", "9c", "Tc"]))
    (checked,) = audit(events)
    assert checked.fair and checked.proofs == checked.cards == 0


def test_R32_audit_of_one_hand_reads_the_same_as_audit_of_its_stream():
    events = one_hand()
    assert audit(events) == [audit_hand(events)]
    assert stream(json.loads(msgspec.json.encode(events))) == msgspec.json.decode(msgspec.json.encode(events),
                                                                                    type=list[TableEvent])
