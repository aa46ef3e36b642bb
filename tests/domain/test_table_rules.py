"""Rules of the table aggregate that scripted hands do not show well: seats, chips,
the button, antes, time, live-dealer input and fair dealing.  Rule ids in the names."""

from __future__ import annotations

import hashlib
import random

import msgspec
import pytest

from studroom.domain import views
from studroom.domain.cards import parse, show_many
from studroom.domain.commands import (
    Act, BuyIn, DealStreet, Leave, OpenTable, PostAnte, Show, SitDown, StartHand, Timeout,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.deck import seed_hash, seeded_order
from studroom.domain.errors import DomainError
from studroom.domain.events import (
    AntesCollected, AnteSkipped, CardsDealt, HandCancelled, HandEnded, HandMucked, HandStarted,
    LastCardsExposed, PlayerLeft, RoundStarted, TimedOut, TurnStarted,
)
from studroom.domain.games import GAMES
from studroom.domain.table import Table
from studroom.domain.simulate import choose, play_hand

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
SEED = "ab" * 32


def table_with(players: int, game: str = "seven_card_stud", stack: int = 1000, auto_ante: bool = True, **config):
    table = Table()
    table.execute(OpenTable(table_id="t1", config=TableConfig(game=game, stakes=STAKES, **config)))
    for seat in range(players):
        table.execute(SitDown(seat=seat, player=f"p{seat}", auto_ante=auto_ante))
        table.execute(BuyIn(seat=seat, amount=stack))
    return table


def last(events, kind):
    return next(e for e in reversed(events) if isinstance(e, kind))


def refused(table: Table, command, code: str) -> None:
    before = table.state()
    with pytest.raises(DomainError) as caught:
        table.execute(command)
    assert caught.value.code == code
    assert table.state() == before


def test_R1_three_games_are_profiles_of_one_engine():
    assert set(GAMES) == {"seven_card_stud", "seven_card_stud_hilo", "five_card_stud"}
    for game in GAMES:
        table = table_with(3, game)
        events = play_hand(table, random.Random(1))
        assert isinstance(events[-1], HandEnded)


def test_R2_seat_limits_per_game():
    table = table_with(8)
    refused(table, SitDown(seat=8, player="ninth"), "too_many_seats")
    five = table_with(10, "five_card_stud")
    assert len(five.seats) == 10
    with pytest.raises(DomainError) as e:
        Table().execute(OpenTable(table_id="x", config=TableConfig(game="seven_card_stud", stakes=STAKES, seats=11)))
    assert e.value.code == "too_many_seats"


def test_R3_buy_in_at_least_ten_small_bets_and_only_between_hands():
    table = table_with(2)
    table.execute(SitDown(seat=5, player="late"))
    refused(table, BuyIn(seat=5, amount=199), "short_buy_in")
    table.execute(BuyIn(seat=5, amount=200))
    capped = table_with(2, max_buy_in=1000)
    refused(capped, BuyIn(seat=0, amount=1), "over_max_buy_in")
    table.execute(StartHand(seed=SEED))
    refused(table, BuyIn(seat=0, amount=100), "hand_in_progress")


def test_R3_leaving_mid_hand_folds_and_cashes_out_when_the_hand_ends():
    table = table_with(3)
    events = table.execute(StartHand(seed=SEED))
    turn = last(events, TurnStarted)
    leaver = next(s for s in range(3) if s != turn.seat)
    events += table.execute(Leave(seat=leaver))
    assert table.hand is not None and table.hand.players[leaver].folded
    assert leaver in table.seats                     # still seated until the hand ends
    rng = random.Random(2)
    while table.hand is not None:
        turn = last(events, TurnStarted)
        try:
            events += table.execute(choose(turn, rng))
        except DomainError:
            events += table.execute(Show(seat=turn.seat))
    left = last(events, PlayerLeft)
    assert left.seat == leaver and left.cashed_out == 1000 - 5
    assert leaver not in table.seats


def test_R4_button_moves_one_occupied_seat_clockwise_and_dealing_starts_left_of_it():
    table = Table()
    table.execute(OpenTable(table_id="t", config=TableConfig(game="seven_card_stud", stakes=STAKES)))
    for seat in (1, 4, 6):
        table.execute(SitDown(seat=seat, player=f"p{seat}"))
        table.execute(BuyIn(seat=seat, amount=1000))
    buttons, first_dealt = [], []
    rng = random.Random(3)
    for _ in range(4):
        events = play_hand(table, rng)
        started = next(e for e in events if isinstance(e, HandStarted))
        buttons.append(started.button)
        first_dealt.append(next(e for e in events if isinstance(e, CardsDealt)).cards[0].seat)
    assert buttons[1:] == [{1: 4, 4: 6, 6: 1}[b] for b in buttons[:-1]]
    assert first_dealt == [{1: 4, 4: 6, 6: 1}[b] for b in buttons]


def test_R5_a_player_who_does_not_post_in_time_sits_out_the_hand():
    table = table_with(3, auto_ante=False)
    events = table.execute(StartHand(seed=SEED, now_ms=1_000))
    window = last(events, TurnStarted)
    assert window.kind == "ante" and window.deadline_ms == 1_000 + 10_000
    table.execute(PostAnte(seat=0))
    table.execute(PostAnte(seat=2))
    events = table.execute(Timeout(turn=window.turn))
    assert [e.seat for e in events if isinstance(e, AnteSkipped)] == [1]
    assert table.hand is not None and not table.hand.players[1].dealt_in
    assert {d.seat for d in next(e for e in events if isinstance(e, CardsDealt)).cards} == {0, 2}


def test_R5_fewer_than_two_antes_cancels_the_hand_and_returns_the_antes():
    table = table_with(3, auto_ante=False)
    window = last(table.execute(StartHand(seed=SEED)), TurnStarted)
    table.execute(PostAnte(seat=1))
    events = table.execute(Timeout(turn=window.turn))
    assert isinstance(events[-1], HandCancelled) and events[-1].refunds == {1: 5}
    assert table.hand is None and table.seats[1].stack == 1000


def test_R18_turn_deadline_is_ten_seconds_or_the_tables_own():
    events = table_with(2).execute(StartHand(seed=SEED, now_ms=5_000))
    assert last(events, TurnStarted).deadline_ms == 15_000
    events = table_with(2, action_seconds=25).execute(StartHand(seed=SEED, now_ms=5_000))
    assert last(events, TurnStarted).deadline_ms == 30_000


def test_R19_bring_in_timeout_posts_the_bring_in_then_protection_after_chips_went_in():
    table = table_with(3)
    events = table.execute(StartHand(seed=SEED))
    turn = last(events, TurnStarted)
    events = table.execute(Timeout(turn=turn.turn))
    assert last(events, TimedOut).outcome == "bring_in"
    bring_in_seat = turn.seat
    # the others complete and raise; the bring-in player then times out facing a bet
    while table.hand.to_act != bring_in_seat:
        turn = last(events, TurnStarted)
        action = "complete" if "complete" in turn.options else "call"
        events += table.execute(Act(seat=turn.seat, action=action))
    turn = last(events, TurnStarted)
    events = table.execute(Timeout(turn=turn.turn))
    assert last(events, TimedOut).outcome == "protected"
    p = table.hand.players[bring_in_seat]
    assert p.protected and not p.folded and p.stack > 0


def test_R19_check_or_fold_policy_folds_facing_a_bet():
    table = table_with(3, timeout_policy="check_or_fold")
    events = table.execute(StartHand(seed=SEED))
    turn = last(events, TurnStarted)
    events = table.execute(Act(seat=turn.seat, action="bring_in"))
    events = table.execute(Timeout(turn=last(events, TurnStarted).turn))
    assert last(events, TimedOut).outcome == "fold"


def test_R20_a_timeout_for_a_turn_that_ended_is_refused_as_stale():
    table = table_with(3)
    events = table.execute(StartHand(seed=SEED))
    turn = last(events, TurnStarted)
    table.execute(Act(seat=turn.seat, action="bring_in"))
    refused(table, Timeout(turn=turn.turn), "stale_timeout")


def test_R23_mucked_cards_are_kept_for_the_record_but_never_public():
    mucked = HandMucked(seat=2, cards=["As", "Kd", "2c"])
    assert views.public(mucked).cards == []


def test_R32_the_seed_is_committed_first_the_deck_before_the_first_card_and_the_seed_never_published():
    table = table_with(4)
    events = play_hand(table, random.Random(9))
    started = events[0]
    assert isinstance(started, HandStarted) and started.seed is not None
    seed = bytes.fromhex(started.seed)
    assert started.commitment == seed_hash(seed) == hashlib.sha256(seed).hexdigest()
    committed = next(i for i, e in enumerate(events) if isinstance(e, AntesCollected))
    first_card = next(i for i, e in enumerate(events) if isinstance(e, CardsDealt))
    collected = events[committed]
    assert committed < first_card and len(collected.deck_root) == 64 and collected.deck_format == 2
    assert collected.deck_size == 4 * 7 + 4 and len(collected.deck_leaves) == 32 * 32   # the cards a hand can take
    public = b"".join(msgspec.json.encode(views.public(e)) for e in events)
    assert started.seed.encode() not in public and isinstance(events[-1], HandEnded)
    deck = seeded_order(seed)                        # no entropy: the key is the seed
    dealt = []
    for e in events:
        if isinstance(e, CardsDealt):
            dealt += [parse(b) for b in e.burned] + [parse(d.card) for d in e.cards]
    assert dealt == deck[: len(dealt)]               # every card came off that deck, in order


def test_R32_a_players_entropy_is_published_with_his_ante_and_changes_the_deck():
    decks = []
    for entropy in (None, "01", "02"):
        table = table_with(2, auto_ante=False)
        table.execute(StartHand(seed=SEED))
        table.execute(PostAnte(seat=0))
        events = table.execute(PostAnte(seat=1, entropy=entropy))
        posted = events[0]
        assert posted.entropy == entropy and views.public(posted).entropy == entropy
        decks.append(next(e for e in events if isinstance(e, CardsDealt)).cards)
    assert decks[0] != decks[1] != decks[2] != decks[0]
    assert [d.card for d in decks[0]] == [c for c in show_many(seeded_order(bytes.fromhex(SEED))[:6])]


@pytest.mark.parametrize("entropy", ["", "0", "zz", "ab" * 33, "abc"])
def test_R32_entropy_that_is_no_1_to_32_bytes_of_hex_is_refused(entropy):
    table = table_with(2, auto_ante=False)
    table.execute(StartHand(seed=SEED))
    with pytest.raises(DomainError) as refused:
        table.execute(PostAnte(seat=0, entropy=entropy))
    assert refused.value.code == "bad_entropy"
    assert not table.hand.players[0].posted


def test_R33_public_views_never_carry_a_down_card():
    table = table_with(5)
    events = play_hand(table, random.Random(4))
    for e in events:
        if isinstance(e, CardsDealt):
            public = views.public(e)
            assert all(d.card is None for d in public.cards if not d.up)
            assert public.burned == [] and public.stub == []
            for seat in views.owners_of_private_cards(e):
                mine = views.private(e, seat)
                assert all((d.card is not None) == (d.up or d.seat == seat) for d in mine.cards)


def _live_table_at_seventh(players: int = 3) -> tuple[Table, list]:
    table = table_with(players, auto_deal=False)
    events = table.execute(StartHand(seed=SEED))
    rng_calls = 0
    while True:
        if table.hand.phase == "deal":
            if table.hand.street + 1 == GAMES["seven_card_stud"].last_street:
                return table, events
            events += table.execute(DealStreet())
            continue
        turn = last(events, TurnStarted)
        action = "bring_in" if "bring_in" in turn.options else "check" if "check" in turn.options else "call"
        events += table.execute(Act(seat=turn.seat, action=action))
        rng_calls += 1


def test_R28_an_exposed_seventh_card_turns_up_everyone_elses_last_card():
    table, _ = _live_table_at_seventh()
    events = table.execute(DealStreet(exposed=[1]))
    exposed = next(e for e in events if isinstance(e, LastCardsExposed))
    assert sorted(d.seat for d in exposed.turned) == [0, 2]
    assert all(table.hand.players[s].up[-1] for s in (0, 1, 2))
    assert all(d.card is not None for d in views.public(exposed).turned)


def test_R28_mixed_up_last_cards_skip_the_last_betting_round():
    table, _ = _live_table_at_seventh()
    events = table.execute(DealStreet(mixed=True))
    assert not any(isinstance(e, RoundStarted) for e in events)
    assert table.hand is None or table.hand.phase == "showdown"


def test_R29_an_exposed_last_card_counts_as_down_for_who_opens():
    table, _ = _live_table_at_seventh()
    normal, _ = _live_table_at_seventh()
    opener_exposed = next(e for e in table.execute(DealStreet(exposed=[0])) if isinstance(e, RoundStarted)).opener
    opener_normal = next(e for e in normal.execute(DealStreet()) if isinstance(e, RoundStarted)).opener
    assert opener_exposed == opener_normal


def test_R17_eight_players_to_the_river_get_a_community_card():
    table = table_with(8)
    events = table.execute(StartHand(seed=SEED))
    while table.hand is not None:
        turn = last(events, TurnStarted)
        if turn.kind == "show":
            events += table.execute(Show(seat=turn.seat))
            continue
        action = "bring_in" if "bring_in" in turn.options else "check" if "check" in turn.options else "call"
        events += table.execute(Act(seat=turn.seat, action=action))
    river = [e for e in events if isinstance(e, CardsDealt) and e.street == 4]
    assert len(river) == 1 and river[0].community is not None and river[0].cards == []
    # 24 + 3 x 9 = 51 cards gone: 1 card + 3 burns < 8 + 2, so no reshuffle-and-deal (R17.1);
    # with 1 card left it is shuffled with the burns, one burned, the next turned (R17.2)
    assert river[0].reshuffled and len(river[0].stub) == 4
    ended = last(events, HandEnded)
    assert sum(ended.net.values()) == -ended.rake
