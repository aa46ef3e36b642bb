"""The secrecy checker (tests/secrecy.py) on streams made by the domain: an honest
public stream passes, each kind of planted leak is found where it was planted."""

from __future__ import annotations

import json
import random
from pathlib import Path

import msgspec
import pytest
from secrecy import (
    DOWN_CARD,
    FOLDED_CARD,
    SECRET_FIELD,
    SEED,
    UNREADABLE,
    UNSHOWN_PROOF,
    Message,
    Report,
    Truth,
    scan,
    secret_fields,
)
from studroom.domain import views
from studroom.domain.commands import BuyIn, OpenTable, SitDown, StartHand, Timeout
from studroom.domain.config import TableConfig
from studroom.domain.cards import parse
from studroom.domain.deck import SEED_BYTES, CommittedDeck
from studroom.domain.events import (
    EVENT_TYPES,
    Acted,
    CardsDealt,
    DealtCard,
    Event,
    HandCancelled,
    HandEnded,
    HandMucked,
    HandShown,
    HandStarted,
    RoundStarted,
    ShowdownStarted,
    TableEvent,
    TurnStarted,
)
from studroom.domain.scenario import play
from studroom.domain.simulate import STAKES, new_table, play_hand, top_up
from studroom.domain.table import Table

SCENARIOS = sorted(p for p in (Path(__file__).parent / "scenarios").glob("*.json")
                   if "result" in json.loads(p.read_text(encoding="utf-8"))["expect"])   # hands played out
encode = msgspec.json.encode


def hands(game: str, players: int, count: int, seed: int) -> list[Event]:
    """A table's stored events: ``count`` random hands, some turns timed out."""
    rng = random.Random(seed)
    table, events = new_table(game, players)
    for _ in range(count):
        events += play_hand(table, rng, timeout_rate=0.05)
        events += top_up(table, 2000)
    return events


def public(events: list[Event], table: str = "t") -> list[Message]:
    return [Message(table, v, encode(views.public(e))) for v, e in enumerate(events, start=1)]


def private(events: list[Event], table: str = "t") -> list[Message]:
    """Every private copy, addressed to the player dealt in at its seat."""
    messages, holders = [], {}
    for v, e in enumerate(events, start=1):
        if isinstance(e, HandStarted):
            holders = {s.seat: s.player for s in e.seats}
        messages += [Message(table, v, encode(copy), holders[seat]) for seat in views.owners_of_private_cards(e)
                     if (copy := views.private(e, seat)) is not None]
    return messages


def truth(events: list[Event], table: str = "t") -> Truth:
    return Truth().learn_stored(table, events)


def planted(messages: list[Message], version: int, event: Event) -> list[Message]:
    """The stream with the message of ``version`` replaced by ``event``."""
    return [m._replace(data=encode(event)) if m.version == version else m for m in messages]


def found(report: Report) -> set[tuple[str, int | None]]:
    return {(leak.kind, leak.version) for leak in report.leaks}


def scenario_events(path: Path) -> list[Event]:
    """A golden hand's stored events, from its HandStarted on."""
    output = play(json.loads(path.read_text(encoding="utf-8"))["scenario"])
    return [msgspec.convert(e, TableEvent) for e in output["events"]]


def down_cards(events: list[Event]) -> dict[str, int]:
    return {d.card: d.seat for e in events if isinstance(e, CardsDealt) for d in e.cards
            if not d.up and d.card is not None}


def face_down(events: list[Event]) -> int:
    """How many cards were dealt face down."""
    return sum(not d.up for e in events if isinstance(e, CardsDealt) for d in e.cards)


def first(events: list[Event], kind: type, after: int = 0) -> int:
    """The version of the first event of ``kind`` after version ``after``."""
    return next(v for v, e in enumerate(events, start=1) if v > after and isinstance(e, kind))


# ------------------------------------------------------------------ honest streams pass


@pytest.mark.parametrize("game, players", [("seven_card_stud", 8), ("seven_card_stud_hilo", 5), ("five_card_stud", 4)])
def test_R23_R33_an_honest_public_stream_has_no_leak(game: str, players: int) -> None:
    events = hands(game, players, 40, seed=players)
    report = scan(public(events), truth(events))
    assert report.leaks == [], str(report)
    assert report.messages == len(events) and report.hands == 40
    assert report.hidden_cards == face_down(events) >= 40 * players
    assert any(isinstance(e, HandShown) for e in events)          # shown cards were scanned too


def test_R33_checked_against_the_private_copies_an_honest_stream_has_no_leak() -> None:
    events = hands("seven_card_stud", 6, 20, seed=7)
    report = scan(public(events), Truth().learn_private(private(events)))
    assert report.leaks == [] and report.hidden_cards == face_down(events)


def test_the_messages_of_many_tables_in_any_order_and_twice_are_scanned_once_each() -> None:
    streams = {f"t{k}": hands("seven_card_stud", 3, 5, seed=k) for k in range(3)}
    messages = [m for table, events in streams.items() for m in public(events, table)]
    known = Truth()
    for table, events in streams.items():
        known.learn_stored(table, events)
    mixed = messages + messages[::3]
    random.Random(1).shuffle(mixed)
    report = scan(mixed, known)
    assert report.leaks == [] and report.messages == len(messages) and report.hands == 15


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_R23_R28_every_golden_hand_published_honestly_has_no_leak(path: Path) -> None:
    """Mucks (privately to the showdown's players), R17 reshuffles and community cards,
    R28's turned 7th cards, scripted decks (never published), every card's proof."""
    events = scenario_events(path)
    report = scan(public(events) + private(events), truth(events))
    assert report.leaks == [], str(report)


def test_R23_a_player_named_like_a_hidden_card_is_no_leak() -> None:
    """Cards are whole card values of the decoded event, never text found in bytes."""
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    for seat, name in enumerate(["As", "Kd", "7h", "2c"]):
        events += table.execute(SitDown(seat=seat, player=name)) + table.execute(BuyIn(seat=seat, amount=2000))
    rng = random.Random(3)
    for _ in range(30):
        events += play_hand(table, rng)
    assert set(down_cards(events)) & {"As", "Kd", "7h", "2c"}
    assert scan(public(events), truth(events)).leaks == []


# ------------------------------------------------------------------ each planted leak is found


def test_R33_a_down_card_left_in_a_public_deal_is_found_even_without_the_truth() -> None:
    events = hands("seven_card_stud", 4, 3, seed=11)
    v = first(events, CardsDealt)
    dealt: CardsDealt = events[v - 1]  # type: ignore[assignment]
    leaked = msgspec.structs.replace(dealt, burned=[])            # only the cards, no secret field
    for known in (truth(events), None):
        report = scan(planted(public(events), v, leaked), known)
        assert found(report) == {(DOWN_CARD, v)}
        hidden = [d for d in dealt.cards if not d.up]
        assert len([leak for leak in report.leaks if "proof" not in leak.what]) == len(hidden)
        assert len([leak for leak in report.leaks if "a proof opens" in leak.what]) == len(hidden)   # R32


def test_R23_a_down_card_anywhere_else_before_the_showdown_is_found() -> None:
    """A hidden card as a later street's door card: only the truth knows it is hidden."""
    events = hands("seven_card_stud", 4, 3, seed=12)
    v = first(events, RoundStarted, after=first(events, CardsDealt, after=first(events, RoundStarted)))
    card = next(iter(down_cards(events[:v])))
    leaked = msgspec.structs.replace(events[v - 1], door_card=card)
    assert found(scan(planted(public(events), v, leaked), truth(events))) == {(DOWN_CARD, v)}
    assert found(scan(planted(public(events), v, leaked), Truth().learn_private(private(events)))) == {(DOWN_CARD, v)}


def test_R23_a_hand_shown_before_the_showdown_is_a_leak() -> None:
    events = hands("seven_card_stud", 3, 10, seed=13)
    v = first(events, ShowdownStarted)
    shown_v = first(events, HandShown, after=v)
    early = v - 1                                                  # the event before the showdown starts
    report = scan(planted(public(events), early, events[shown_v - 1]), truth(events))
    assert found(report) == {(DOWN_CARD, early)}


def _fold_then_showdown(events: list[Event]) -> tuple[int, int, int]:
    """A hand with a fold and a showdown: (the folded seat, the fold's version, the
    showdown's version)."""
    for v, e in enumerate(events, start=1):
        if isinstance(e, Acted) and e.action == "fold":
            end = first(events, HandEnded, after=v)
            showdown = next((w for w in range(v, end) if isinstance(events[w - 1], ShowdownStarted)), None)
            if showdown is not None:
                return e.seat, v, showdown
    raise AssertionError("no hand with a fold and a showdown")


def test_R23_a_folded_hand_shown_at_the_showdown_is_found() -> None:
    events = hands("seven_card_stud", 5, 30, seed=14)
    seat, fold, showdown = _fold_then_showdown(events)
    hand_start = max(v for v, e in enumerate(events[:fold], start=1) if isinstance(e, HandStarted))
    cards = [c for c, s in down_cards(events[hand_start - 1:fold]).items() if s == seat]
    at = showdown + 1
    report = scan(planted(public(events), at, HandShown(seat=seat, cards=cards)), truth(events))
    assert found(report) == {(FOLDED_CARD, at)} and len(report.leaks) == len(cards)


def test_R23_a_mucked_hands_cards_in_public_are_found() -> None:
    path = next(p for p in SCENARIOS if "muck_gives_up_the_pot" in p.stem)
    events = scenario_events(path)
    v = first(events, HandMucked)
    report = scan(planted(public(events), v, events[v - 1]), truth(events))
    assert found(report) == {(SECRET_FIELD, v), (FOLDED_CARD, v)}


def test_R32_a_seed_in_any_message_at_any_time_is_found() -> None:
    """R32 as revised: the seed never leaves the store, not even after its hand."""
    events = hands("seven_card_stud", 4, 3, seed=15)
    start = first(events, HandStarted)
    seed = events[start - 1].seed  # type: ignore[attr-defined]
    assert seed and seed.encode() not in b"".join(m.data for m in public(events) + private(events))
    report = scan(planted(public(events), start, events[start - 1]), truth(events))
    assert found(report) == {(SECRET_FIELD, start), (SEED, start)}
    turn = first(events, TurnStarted, after=start)
    hinted = msgspec.structs.replace(events[turn - 1], command_id=f"x{seed}")
    assert found(scan(planted(public(events), turn, hinted), truth(events))) == {(SEED, turn)}
    after = first(events, TurnStarted, after=first(events, HandEnded))
    late = msgspec.structs.replace(events[after - 1], command_id=seed)
    assert found(scan(planted(public(events), after, late), truth(events))) == {(SEED, after)}


def test_R32_a_cancelled_hands_seed_is_never_revealed() -> None:
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    for seat in range(2):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}", auto_ante=False))
        events += table.execute(BuyIn(seat=seat, amount=2000))
    seed = random.Random(5).randbytes(SEED_BYTES).hex()
    events += table.execute(StartHand(seed=seed))
    events += table.execute(Timeout(turn=table.turn))
    assert any(isinstance(e, HandCancelled) for e in events)
    events += table.execute(SitDown(seat=2, player="p2"))
    late = len(events)
    leaked = msgspec.structs.replace(events[-1], command_id=seed)
    assert found(scan(planted(public(events), late, leaked), truth(events))) == {(SEED, late)}


def test_every_secret_field_in_a_public_copy_is_found() -> None:
    """Each stored event with a secret field set, put in place of its public copy, is
    found for exactly those fields; the golden hands and a seeded one set every secret
    field there is."""
    declared = {(cls.__name__, name) for cls in EVENT_TYPES for name in cls.__secret__}
    seen: set[tuple[str, str]] = set()
    for events in [scenario_events(path) for path in SCENARIOS] + [hands("seven_card_stud", 4, 2, seed=17)]:
        for v, event in enumerate(events, start=1):
            names = set(secret_fields(event))
            if names:
                report = scan(planted(public(events), v, event), truth(events))
                assert {leak.what.split(" = ")[0] for leak in report.leaks if leak.kind == SECRET_FIELD} == names
                assert {leak.version for leak in report.leaks} == {v}
                seen |= {(type(event).__name__, name) for name in names}
    assert seen == declared


def test_a_public_message_that_is_no_event_or_has_no_version_is_unreadable() -> None:
    events = hands("five_card_stud", 2, 1, seed=16)
    messages = public(events) + [Message("t", 999, b"\x00garbage"), Message("t", None, encode(views.public(events[0])))]
    report = scan(messages, truth(events))
    assert found(report) == {(UNREADABLE, 999), (UNREADABLE, None)}


# ------------------------------------------------------------------ private copies and proofs (R23, R32)


@pytest.mark.parametrize("game, players", [("seven_card_stud", 8), ("five_card_stud", 10)])
def test_R23_R32_every_private_copy_as_its_reader_gets_it_has_no_leak(game: str, players: int) -> None:
    events = hands(game, players, 30, seed=players + 1)
    copies = private(events)
    assert any(m.data.startswith(b'{"type":"HandMucked"') for m in copies)       # mucks went to participants
    report = scan(public(events) + copies, truth(events))
    assert report.leaks == [], str(report)


def test_R33_a_private_copy_with_another_players_down_card_is_found() -> None:
    events = hands("seven_card_stud", 4, 2, seed=21)
    v = first(events, CardsDealt)
    dealt: CardsDealt = events[v - 1]  # type: ignore[assignment]
    seat = dealt.cards[0].seat
    other = next(d for d in dealt.cards if d.seat != seat and not d.up)
    player = next(e for e in events if isinstance(e, HandStarted)).seats
    to = next(s.player for s in player if s.seat == seat)
    leaked = msgspec.structs.replace(views.private(dealt, seat), cards=[
        d if d.seat != other.seat else other for d in views.private(dealt, seat).cards])
    report = scan(public(events) + [Message("t", v, encode(leaked), to)], truth(events))
    assert (DOWN_CARD, v) in found(report)
    assert {leak.event for leak in report.leaks} == {f"CardsDealt to {to}"}
    assert any(f"a proof opens seat {other.seat}'s card {other.card}" == leak.what for leak in report.leaks)


def test_R23_a_mucked_hand_sent_to_a_player_not_at_the_showdown_is_found() -> None:
    events = hands("seven_card_stud", 5, 40, seed=22)
    v = first(events, HandMucked)
    mucked: HandMucked = events[v - 1]  # type: ignore[assignment]
    start = max(w for w in range(1, v) if isinstance(events[w - 1], HandStarted))
    outsider = next(s.player for s in events[start - 1].seats if s.seat not in mucked.participants)
    report = scan(public(events) + [Message("t", v, encode(mucked), outsider)], truth(events))
    assert found(report) == {(FOLDED_CARD, v), (SECRET_FIELD, v)}
    down = [c for c, s in down_cards(events[start - 1 : v]).items() if s == mucked.seat]
    assert sum("a proof opens" in leak.what for leak in report.leaks) == len(down) > 0


def test_R23_R32_a_folded_cards_proof_in_a_public_message_is_found_without_its_card() -> None:
    events = hands("seven_card_stud", 5, 30, seed=14)
    seat, fold, showdown = _fold_then_showdown(events)
    hand_start = max(v for v, e in enumerate(events[:fold], start=1) if isinstance(e, HandStarted))
    v = first(events, CardsDealt, after=hand_start)
    dealt: CardsDealt = events[v - 1]  # type: ignore[assignment]
    down = next(d for d in dealt.cards if d.seat == seat and not d.up)
    public_copy = views.public(dealt)
    leaked = msgspec.structs.replace(public_copy, cards=[
        DealtCard(d.seat, None, False, down.proof) if d.seat == seat and not d.up else d for d in public_copy.cards])
    report = scan(planted(public(events), v, leaked), truth(events))
    assert found(report) == {(DOWN_CARD, v)}              # not folded yet at the deal: a down card
    assert report.leaks[0].what == f"a proof opens seat {seat}'s card {down.card}"
    later = showdown + 1                                   # after the fold: a folded card
    hint = HandShown(seat=seat, cards=[], proofs=[down.proof])
    report = scan(planted(public(events), later, hint), truth(events))
    assert (FOLDED_CARD, later) in found(report)


def test_R32_a_proof_of_a_burned_card_is_found() -> None:
    events = hands("seven_card_stud", 3, 1, seed=23)
    started: HandStarted = events[first(events, HandStarted) - 1]  # type: ignore[assignment]
    v = first(events, CardsDealt, after=first(events, CardsDealt))        # street 1: it has a burn
    dealt: CardsDealt = events[v - 1]  # type: ignore[assignment]
    deck = CommittedDeck(bytes.fromhex(started.seed))
    burned = deck.proof(parse(dealt.burned[0]))
    up = dealt.cards[0]
    leaked = msgspec.structs.replace(views.public(dealt), cards=[DealtCard(up.seat, up.card, True, burned)]
                                     + views.public(dealt).cards[1:])
    report = scan(planted(public(events), v, leaked), truth(events))
    assert found(report) == {(UNSHOWN_PROOF, v)}
    assert report.leaks[0].what == f"a proof opens {dealt.burned[0]} at place {burned.place}, a card it does not show"
