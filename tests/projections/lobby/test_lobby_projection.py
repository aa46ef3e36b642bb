"""The lobby's projection against the domain, without servers: random play at tables of
the three games, every public event folded into a lobby entry, and after every event
(a batch the lobby writes may end inside a command) the entry shows what the table
shows a spectator (its own view, ``ViewTable``): seats, stacks, the running hand's pot,
bets, up cards, how many down cards, folds, all-ins, the open turn.  No hidden card is
ever in an entry (R23, R33)."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
import pytest
from lobby_tables import T0
from studroom.domain import views
from studroom.domain.commands import (
    BuyIn,
    CloseTable,
    Command,
    ConfigureTable,
    JoinWaitingList,
    Leave,
    LeaveWaitingList,
    PauseTable,
    PostAnte,
    RemovePlayer,
    ResumeTable,
    ScheduleHand,
    Show,
    SitDown,
    SitOut,
    SitOutPlayer,
    StartHand,
    Timeout,
)
from studroom.domain.config import Stakes
from studroom.domain.deck import SEED_BYTES
from studroom.domain.errors import DomainError
from studroom.domain.events import (
    CardsDealt,
    Event,
    HandEnded,
    HandShown,
    HandStarted,
    PotAwarded,
    TimedOut,
    TurnStarted,
)
from studroom.domain.simulate import choose, new_table
from studroom.domain.table import Table
from studroom.projections.lobby.entry import (
    CLOSED,
    CLOSING,
    OPEN,
    PAUSED,
    LobbyEntry,
    decode,
    encode,
)
from studroom.projections.lobby.projection import apply, fourth_street, from_view
from studroom.projections.lobby.rendering import lobby_text
from studroom.projections.lobby.queries import stakes_label

STACK = 1_000


class Feed:
    """A table played in-process, its public events folded into a lobby entry as the
    lobby service does (version, stream sequence, stored at one second apart)."""

    def __init__(self, game: str, players: int, rng: random.Random) -> None:
        self.rng = rng
        self.table, opening = new_table(game, players, stack=STACK)
        self.shadow = Table()                # the table event by event (``table`` runs commands)
        self.entry: LobbyEntry | None = None
        self.version = 0
        self.hidden: set[str] = set()        # the hand's down cards not shown
        self.events: list[Event] = []
        self.fold(opening)

    def fold(self, events: list[Event]) -> None:
        for event in events:
            self.version += 1
            self.events.append(event)
            self._follow_secrets(event)
            self.entry = apply(self.entry, views.public(event), self.version, self.version,
                               T0 + 1000 * self.version)
            self.shadow.apply(event)
            check(self)

    def _follow_secrets(self, event: Event) -> None:
        if isinstance(event, HandStarted):
            self.hidden = set()
        elif isinstance(event, CardsDealt):
            self.hidden |= {d.card for d in event.cards if not d.up and d.card is not None}
        elif isinstance(event, HandShown):
            self.hidden -= set(event.cards)

    def run(self, command: Command) -> bool:
        """Execute ``command``; False if the table refused it."""
        try:
            events = self.table.execute(command)
        except DomainError:
            return False
        self.fold(events)
        return True


def seen(entry: LobbyEntry) -> dict[str, Any]:
    """What a spectator may compare between the lobby and the table's view."""
    hand = entry.hand if entry.running else None
    return {
        "seats": [(r.seat, r.player, r.stack, r.sitting_out) for r in entry.players],
        "hand_no": entry.hand_no,
        "state": entry.state,
        "waiting": entry.waiting,
        "hand": None if hand is None else {
            "street": hand.street, "pot": hand.pot, "community": hand.community,
            "players": [(p.seat, p.player, p.stack, p.bet, p.up, p.down, p.shown, p.folded, p.all_in)
                        for p in hand.players],
            "turn": hand.turn,
        },
    }


def as_the_table_shows_it(table: Table) -> dict[str, Any]:
    return seen(from_view(views.table_view(table, None), None, 0, T0))


def cards_in(entry: LobbyEntry) -> set[str]:
    def walk(value: Any) -> Any:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in ("table_id", "player", "game"):
                    yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)
    return set(walk(json.loads(encode(entry))))


def check(feed: Feed) -> None:
    """After every event: the entry as the table (at that event) shows it."""
    assert feed.entry is not None
    assert seen(feed.entry) == as_the_table_shows_it(feed.shadow), type(feed.events[-1]).__name__
    assert feed.entry.version == feed.shadow.version
    assert not cards_in(feed.entry) & feed.hidden, "a hidden card in the lobby"


def play_hand(feed: Feed, timeouts: float) -> None:
    """One hand after the pause before it, random legal answers (some turns time out)."""
    table, rng = feed.table, feed.rng
    if feed.run(ScheduleHand(pause_ms=500)):       # the lobby shows nothing of a pause
        assert feed.run(Timeout(turn=table.turn))
    if not feed.run(StartHand(seed=rng.randbytes(SEED_BYTES).hex())):
        return
    while table.hand is not None:
        turn = table.last_turn
        assert turn is not None
        if rng.random() < timeouts:
            command: Command = Timeout(turn=turn.turn)
        elif turn.kind == "ante":
            command = PostAnte(seat=next(s for s, p in table.hand.players.items() if not p.posted and not p.folded))
        else:
            command = choose(turn, rng)
        if not feed.run(command):
            assert feed.run(Show(seat=turn.seat)), "R22: the last claimant shows"  # type: ignore[arg-type]


def between_hands(feed: Feed, hand: int) -> None:
    """Seats change between hands: someone sits out or back, leaves, comes, tops up."""
    table, rng = feed.table, feed.rng
    assert table.config is not None
    for seat, state in list(table.seats.items()):
        roll = rng.random()
        if roll < 0.05:
            feed.run(Leave(seat=seat))
        elif roll < 0.1:
            feed.run(SitOut(seat=seat, sitting_out=not state.sitting_out))
        elif state.stack < table.config.min_buy_in:
            feed.run(BuyIn(seat=seat, amount=STACK - state.stack))
    free = [s for s in range(min(table.config.seats, table.config.max_players)) if s not in table.seats]
    if free and len(table.seats) < table.config.max_players:
        feed.run(SitDown(seat=free[0], player=f"late{hand}"))
        feed.run(BuyIn(seat=free[0], amount=STACK))


@pytest.mark.parametrize("game, players", [("seven_card_stud", 6), ("seven_card_stud_hilo", 8),
                                           ("five_card_stud", 10)])
def test_R23_R33_the_lobby_shows_what_the_table_shows_a_spectator_and_never_a_hidden_card(
        game: str, players: int) -> None:
    feed = Feed(game, players, random.Random(f"lobby-{game}"))
    for hand in range(60):
        play_hand(feed, timeouts=0.1)
        between_hands(feed, hand)
    assert feed.entry is not None
    ended = sum(isinstance(e, HandEnded) for e in feed.events)
    assert ended > 30 and feed.entry.hands == ended
    assert feed.entry.timeouts == sum(isinstance(e, TimedOut) for e in feed.events) > 0


def test_the_figures_count_the_last_hour_of_hands_pots_fourth_street_and_timeouts() -> None:
    feed = Feed("seven_card_stud", 4, random.Random(7))
    for _ in range(20):
        for seat in [seat for seat, state in feed.table.seats.items() if state.sitting_out]:
            feed.run(SitOut(seat=seat, sitting_out=False))          # back after a timeout sat him out (R34)
        play_hand(feed, timeouts=0.05)
    entry = feed.entry
    assert entry is not None
    fourth = fourth_street("seven_card_stud")
    hands = dealt = saw = pots = 0
    for e in feed.events:
        if isinstance(e, CardsDealt) and e.street == 0:
            dealt += len({d.seat for d in e.cards})
        elif isinstance(e, CardsDealt) and e.street == fourth:
            saw += len({d.seat for d in e.cards})
        elif isinstance(e, PotAwarded):
            pots += e.amount
        hands += isinstance(e, HandEnded)
    figures = entry.figures
    # every event was stored a second apart: the hour holds all of them
    assert figures.hands_per_hour == hands == entry.hands > 10
    assert figures.average_pot == pots // hands
    assert figures.fourth_street_pct == 100 * saw // dealt
    assert figures.timeouts_per_hour == entry.timeouts
    assert figures.seats_taken == 4 and figures.seats_free == 8 - 4


def test_the_floor_s_commands_show_as_the_table_takes_them() -> None:
    """Issue 18: paused, resumed, configured (from the next hand on), a player sat out and
    one removed, closed mid-hand (closing, then closed with every seat gone); the entry
    as the table shows it after every event (``check``)."""
    feed = Feed("seven_card_stud", 4, random.Random(11))
    assert feed.table.config is not None
    bigger = msgspec.structs.replace(feed.table.config, stakes=Stakes(small_bet=50, big_bet=100, ante=10))
    assert feed.run(PauseTable()) and feed.entry is not None and feed.entry.state == PAUSED
    assert feed.run(ResumeTable()) and feed.entry.state == OPEN
    play_hand(feed, timeouts=0.0)
    assert feed.run(StartHand(seed=bytes(SEED_BYTES).hex()))
    assert feed.run(ConfigureTable(config=bigger)) and stakes_label(feed.entry.stakes) == "20/40"
    assert feed.run(SitOutPlayer(player="p1")) and feed.run(RemovePlayer(player="p2"))
    assert feed.run(CloseTable()) and feed.entry.state == CLOSING
    while feed.table.hand is not None:
        turn = feed.table.last_turn
        assert turn is not None
        feed.run(Timeout(turn=turn.turn))
    assert feed.entry.state == CLOSED and feed.entry.players == []


def test_the_lobby_shows_the_length_of_the_waiting_list() -> None:
    """Joined, offered a seat, left, seated from the list, and the list emptied by a
    close: the entry's count is the table's list after every event (``check``)."""
    feed = Feed("seven_card_stud", 7, random.Random(12))         # one seat free of eight players
    for player in ("w1", "w2", "w3"):
        assert feed.run(JoinWaitingList(player=player))
    assert feed.entry is not None and feed.entry.waiting == 3
    assert feed.run(LeaveWaitingList(player="w2")) and feed.entry.waiting == 2
    assert feed.run(SitDown(seat=7, player="w1")) and feed.entry.waiting == 1    # w1 was offered seat 7
    assert feed.run(CloseTable()) and feed.entry.waiting == 0
    assert "waiting" in lobby_text([feed.entry]).splitlines()[0]


def test_an_entry_survives_its_encoding_and_a_turn_is_whose_it_is() -> None:
    feed = Feed("five_card_stud", 3, random.Random(3))
    feed.run(StartHand(seed=bytes(SEED_BYTES).hex()))
    while feed.table.hand is not None and feed.table.last_turn is not None and feed.table.last_turn.kind == "ante":
        feed.run(PostAnte(seat=next(s for s, p in feed.table.hand.players.items() if not p.posted)))
    entry = feed.entry
    assert entry is not None and entry.running and entry.hand is not None
    assert decode(encode(entry)) == entry
    turn = next(e for e in reversed(feed.events) if isinstance(e, TurnStarted))
    assert entry.hand.turn is not None and entry.hand.turn.seat == turn.seat
    assert entry.hand.turn.deadline_ms == turn.deadline_ms
