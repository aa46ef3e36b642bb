"""Random legal play against the pure domain: the engine of property tests, benchmarks,
bot decisions and the simulated rooms the ledger, history and dispute tests are built on.

Pure like the rest of the domain: every draw comes from a ``random.Random`` the caller
hands in (or the seed it gives), every time from the simulated service clock.  Two
levels of play:

- the rules alone: :func:`new_table`, :func:`play_hand` and :func:`top_up` carry out
  bare commands (no sender, no clock), the fastest play (what ``bench domain`` times);
- the room: a :class:`SimulatedTable` is a table as the room stores it (every command
  from its sender with his ids, stamped with the service's clock; the timer's
  timeouts; players' entropy with their antes, R32; players arriving and leaving,
  between hands and during them; a live dealer's streets, R28), and the cashier's side
  of it (:class:`SimulatedCashier`: each player's account events, domain/account.py:
  deposits, buy-ins reserved then confirmed or refunded, cash-outs, withdrawals).
  :func:`simulated_room` plays many tables in turn with one cashier, :func:`play_room`
  gathers their streams.

The chances below are decisions for the simulation only, chosen so that a few dozen
hands see every kind of event.
"""

from __future__ import annotations

import itertools
import random
from bisect import bisect
from collections import defaultdict
from collections.abc import Iterator
from functools import lru_cache
from itertools import accumulate
from typing import NamedTuple

import msgspec

from .account import Account, AccountEvent
from .authority import Sender
from .cards import CARD_TEXT
from .commands import (
    Act, BuyIn, Command, DealStreet, Leave, Muck, OpenTable, PostAnte, Show, SitDown, SitOut, StartHand, Timeout,
)
from .config import Rake, Stakes, TableConfig
from .deck import SEED_BYTES
from .errors import MUST_SHOW, DomainError
from .events import Event, PlayerLeft, TurnStarted
from .hand import HandState
from .table import Table

STAKES = Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40)
GAMES = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")

WEIGHTS = {"fold": 1, "check": 4, "call": 5, "bet": 2, "raise": 2, "complete": 2, "bring_in": 4,
           "show": 8, "muck": 2}

# the simulated room
START_MS = 1_764_601_200_000        # the service clock's first reading (2025-12-01 15:00 UTC)
TIMER = Sender("service", "timer")
CASHIER = Sender("service", "cashier")
FLOOR = Sender("operator", "floor")
RAKE = Rake(basis_points=500, cap=30)
BUY_IN = 50 * STAKES.small_bet      # a newcomer's buy-in, and what a short stack tops up to
BANKROLL = 10 * BUY_IN              # deposited when an account runs short of a buy-in
SIT_DOWN = 0.3                      # chance that a free seat is taken before a hand
LEAVE_BETWEEN_HANDS = 0.03          # chance that a seated player leaves before a hand
LEAVE_BUSTED = 0.5                  # chance that a player without chips leaves (else he buys in again)
LEAVE_DURING_HAND = 0.01            # chance, at each turn, that someone in the hand leaves
TIMEOUT = 0.03                      # chance that a turn times out
REFUSED_TOP_UP = 0.05               # chance that a top-up asks more than the table allows (refunded)
EXPOSED_SEVENTH = 0.3               # chance that a live dealer deals a 7th card face up (R28)
WITHDRAW = 0.3                      # chance that a player who cashed out withdraws half his balance


@lru_cache(maxsize=None)
def _cumulative(options: tuple[str, ...]) -> list[int]:
    return list(accumulate(WEIGHTS[o] for o in options))


def choose(turn: TurnStarted, rng: random.Random) -> Command:
    """A legal answer to a turn, as any client sees it (weighted towards calling; a bet
    or raise is small or big at random where the turn offers both sizes, R12)."""
    seat, options = turn.seat, turn.options
    if seat is None:
        raise ValueError("the ante window is answered with PostAnte by seat")
    cumulative = _cumulative(tuple(options))
    # rng.choices(options, cum_weights=cumulative)[0] without its checks and set-up, for
    # speed: the same draw from the same random number
    action = options[bisect(cumulative, rng.random() * cumulative[-1], 0, len(options) - 1)]
    if action == "show":
        return Show(seat=seat)
    if action == "muck":
        return Muck(seat=seat)
    size = rng.choice(("small", "big")) if turn.sizes and action in ("bet", "raise") else None
    return Act(seat=seat, action=action, size=size)


def next_to_ante(hand: HandState) -> int:
    """A seat of the hand that still owes its ante (R5)."""
    return next(s for s, p in hand.players.items() if not p.posted and not p.folded)


def last_turn(events: list[Event], turn: TurnStarted | None = None) -> TurnStarted | None:
    """The turn the last of ``events`` opened (usually their last event), else ``turn``."""
    for e in reversed(events):
        if type(e) is TurnStarted:
            return e
    return turn


# ------------------------------------------------------------------ the rules alone


def new_table(game: str, players: int, stack: int = 2000, **config: object) -> tuple[Table, list[Event]]:
    table = Table()
    events = table.execute(OpenTable(table_id="t", config=TableConfig(game=game, stakes=STAKES, **config)))
    for seat in range(players):
        events += table.execute(SitDown(seat=seat, player=f"p{seat}"))
        events += table.execute(BuyIn(seat=seat, amount=stack))
    return table, events


def sat_out(table: Table) -> list[int]:
    """The seats sitting out: a simulated player whose turn timed out (R34) comes back
    before the next hand (he sits in himself)."""
    return [seat for seat, state in sorted(table.seats.items()) if state.sitting_out]


def play_hand(table: Table, rng: random.Random, timeout_rate: float = 0.0) -> list[Event]:
    """Start a hand from a fresh seed and play it to the end with random legal moves."""
    events = [e for seat in sat_out(table) for e in table.execute(SitOut(seat=seat, sitting_out=False))]
    events += table.execute(StartHand(seed=rng.randbytes(SEED_BYTES).hex()))
    turn = last_turn(events)
    while (hand := table.hand) is not None:
        assert turn is not None
        command = random_move(hand, turn, rng, timeout_rate)
        try:
            new = table.execute(command)
        except DomainError as refused:
            new = table.execute(_show_instead(command, refused))
        events += new
        turn = last_turn(new, turn)
    return events


def random_move(hand: HandState, turn: TurnStarted, rng: random.Random, timeout_rate: float = 0.0) -> Command:
    """A random legal answer to ``turn`` (an ante posted, or a choice among its
    options), or now and then (``timeout_rate``) the timer's timeout instead."""
    if timeout_rate and rng.random() < timeout_rate:
        return Timeout(turn=turn.turn)
    if turn.kind == "ante":
        return PostAnte(seat=next_to_ante(hand))
    return choose(turn, rng)


def _show_instead(command: Command, refused: DomainError) -> Show:
    """R22: the last claimant may not muck; he shows (any other refusal is a bug)."""
    if refused.code != MUST_SHOW or not isinstance(command, Muck):
        raise refused
    return Show(seat=command.seat)


def top_up(table: Table, stack: int) -> list[Event]:
    """Refill busted or short players so that the next hand has everyone."""
    events: list[Event] = []
    assert table.config is not None
    for seat, state in table.seats.items():
        if state.stack < table.config.min_buy_in:
            events += table.execute(BuyIn(seat=seat, amount=stack - state.stack))
    return events


# -------------------------------------------------------------------------- the room


class SimulatedCashier:
    """The players' accounts as the cashier keeps them (domain/account.py); the account
    events not yet taken wait in ``new`` (:meth:`take`)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.accounts: dict[str, Account] = {}
        self.new: dict[str, list[AccountEvent]] = {}
        self._references = itertools.count(1)

    def _book(self, player: str, event: AccountEvent | None) -> None:
        if event is not None:
            self.new.setdefault(player, []).append(event)

    def reserve(self, player: str, table_id: str, seat: int, amount: int, at_ms: int) -> str:
        """Reserve a buy-in (after a deposit if the balance is short): its table command id."""
        account = self.accounts.setdefault(player, Account(player))
        if account.balance < amount:
            self._book(player, account.deposit(BANKROLL, f"deposit-{next(self._references)}", "floor", at_ms))
        command_id = account.next_buy_in_id(table_id, at_ms * 1000)
        self._book(player, account.reserve(table_id, seat, amount, command_id, str(next(self._references)), at_ms))
        return command_id

    def settle(self, player: str, table_id: str, command_id: str, refused: str | None, at_ms: int) -> None:
        """Confirm the buy-in the table carried out, or refund the one it ``refused``."""
        account = self.accounts[player]
        self._book(player, account.confirm(table_id, command_id, at_ms) if refused is None
                   else account.refund(table_id, command_id, refused, at_ms))

    def cash_out(self, left: PlayerLeft, table_id: str, version: int, at_ms: int) -> None:
        """Credit the chips of a player who left; now and then he withdraws half his balance."""
        account = self.accounts[left.player]
        self._book(left.player, account.cash_out(table_id, version, left.seat, left.cashed_out, at_ms))
        if account.balance and self.rng.random() < WITHDRAW:
            self._book(left.player, account.withdraw(account.balance // 2 or account.balance,
                                                     f"withdrawal-{next(self._references)}", "floor", at_ms))

    def take(self) -> dict[str, list[AccountEvent]]:
        """The account events booked since the last call, by player."""
        new, self.new = self.new, {}
        return new


class SimulatedTable:
    """One table played by random legal moves from ``seed``, its stream in ``events``.
    Alone it keeps its own cashier; in a room the tables share one."""

    def __init__(self, table_id: str, game: str, seats: int = 6, *, seed: int | str = 1, live_dealer: bool = False,
                 cashier: SimulatedCashier | None = None) -> None:
        self.table_id = table_id
        self.rng = random.Random(seed)
        self.cashier = cashier or SimulatedCashier(self.rng)
        self.table = Table()
        self.events: list[Event] = []
        self.now_ms = START_MS
        self.ids: dict[str, int] = {}       # each sender's last command id
        self.newcomers = 0
        self.reported = 0                   # events handed out by :meth:`round`
        config = TableConfig(game=game, stakes=STAKES, rake=RAKE, seats=seats, auto_deal=not live_dealer)
        self.run(OpenTable(table_id=table_id, config=config), FLOOR)

    @property
    def config(self) -> TableConfig:
        assert self.table.config is not None
        return self.table.config

    def run(self, command: Command, by: Sender | None = None, command_id: str | None = None) -> list[Event]:
        """Carry a command out as the table service would: stamped with its clock, with
        the sender's next id (microseconds since the epoch, above his last); cash out
        whoever left."""
        self.now_ms += self.rng.randrange(50, 4000)
        if by is not None and command_id is None:
            last = self.ids[by.key] = max(self.now_ms * 1000, self.ids.get(by.key, 0) + 1)
            command_id = str(last)
        made = self.table.execute(msgspec.structs.replace(command, now_ms=self.now_ms, command_id=command_id), by)
        for version, event in enumerate(made, start=len(self.events) + 1):
            if type(event) is PlayerLeft and event.cashed_out:
                self.cashier.cash_out(event, self.table_id, version, self.now_ms)
        self.events += made
        return made

    def player(self, seat: int) -> Sender:
        return Sender("player", self.table.seats[seat].player)

    def buy_in(self, seat: int, amount: int) -> None:
        """The cashier's saga: reserve in the account, BuyIn as the service "cashier",
        confirm, or refund what the table refused."""
        player = self.table.seats[seat].player
        command_id = self.cashier.reserve(player, self.table_id, seat, amount, self.now_ms)
        try:
            self.run(BuyIn(seat=seat, amount=amount, player=player), CASHIER, command_id)
        except DomainError as refused:
            self.cashier.settle(player, self.table_id, command_id, refused.code, self.now_ms)
        else:
            self.cashier.settle(player, self.table_id, command_id, None, self.now_ms)

    def between_hands(self) -> None:
        """Players leave, newcomers sit down and buy in, short stacks top up (now and
        then above the table's ceiling, R3: refused, refunded)."""
        seats = self.table.seats
        for seat in sat_out(self.table):
            self.run(SitOut(seat=seat, sitting_out=False), self.player(seat))
        for seat in sorted(seats):
            busted = seats[seat].stack == 0
            if self.rng.random() < LEAVE_BETWEEN_HANDS or busted and self.rng.random() < LEAVE_BUSTED:
                self.run(Leave(seat=seat), self.player(seat))
        for seat in range(self.config.seats):
            if seat not in seats and len(seats) < self.config.max_players \
                    and (len(seats) < 2 or self.rng.random() < SIT_DOWN):
                self.newcomers += 1
                name = f"{self.table_id}-p{self.newcomers}"
                self.run(SitDown(seat=seat, player=name), Sender("player", name))
                self.buy_in(seat, BUY_IN)
        for seat, state in sorted(seats.items()):
            if state.stack < self.config.min_buy_in:
                too_much = self.rng.random() < REFUSED_TOP_UP
                self.buy_in(seat, self.config.buy_in_ceiling + 1 if too_much else BUY_IN - state.stack)

    def hand(self) -> None:
        """One hand to its end: players act; now and then a turn times out, or someone
        in the hand leaves."""
        if self.config.auto_deal:
            made = self.run(StartHand(seed=self.rng.randbytes(SEED_BYTES).hex()))
        else:
            made = self.run(StartHand(), FLOOR)       # a live dealer's table: the console starts it
        turn = last_turn(made)
        while (hand := self.table.hand) is not None:
            if hand.phase == "deal":
                made = self.deal(hand)
            else:
                assert turn is not None
                made = self.answer(turn, hand)
            turn = last_turn(made, turn)

    def answer(self, turn: TurnStarted, hand: HandState) -> list[Event]:
        staying = [s for s in hand.players if s in self.table.seats and not self.table.seats[s].leaving]
        if staying and self.rng.random() < LEAVE_DURING_HAND:
            seat = self.rng.choice(staying)
            return self.run(Leave(seat=seat), self.player(seat))
        if self.rng.random() < TIMEOUT:
            return self.run(Timeout(turn=turn.turn), TIMER)
        if turn.kind == "ante":
            seat = next_to_ante(hand)
            return self.run(PostAnte(seat=seat, entropy=self.rng.randbytes(16).hex()), self.player(seat))
        command = choose(turn, self.rng)
        seat = command.seat  # type: ignore[attr-defined]
        try:
            return self.run(command, self.player(seat))
        except DomainError as refused:
            return self.run(_show_instead(command, refused), self.player(seat))

    def deal(self, hand: HandState) -> list[Event]:
        """A live dealer's console: the street's cards from a fresh shuffle; now and then
        a 7th card comes face up (R28)."""
        game = self.table.game
        assert game is not None
        seen = {c for p in hand.players.values() for c in p.cards} | set(hand.community)
        deck = [c for c in range(52) if c not in seen]
        self.rng.shuffle(deck)
        street = hand.street + 1
        live = hand.live() if street else hand.dealt()
        count = len(live) * len(game.streets[street].faces)
        if len(deck) < count:            # R17: too few cards for everyone: one community card
            return self.run(DealStreet(cards=[CARD_TEXT[deck[0]]]), FLOOR)
        down = street == game.last_street and not game.streets[street].faces[0]
        exposed = [live[0].seat] if down and self.rng.random() < EXPOSED_SEVENTH else []
        return self.run(DealStreet(cards=[CARD_TEXT[c] for c in deck[:count]], exposed=exposed), FLOOR)

    def round(self) -> list[Event]:
        """The changes between hands and the next hand (when two players are ready): the
        events since the last round (the first begins with the table's opening)."""
        self.between_hands()
        if len(self.table.ready_seats()) >= 2:
            self.hand()
        new, self.reported = self.events[self.reported:], len(self.events)
        return new

    def play(self, rounds: int) -> list[Event]:
        """Play ``rounds`` rounds: the table's whole stream so far."""
        for _ in range(rounds):
            self.round()
        return self.events


class Played(NamedTuple):
    """One round of one table of a simulated room, and the accounts' events it made."""

    table_id: str
    events: list[Event]
    accounts: dict[str, list[AccountEvent]]    # player -> his account's new events


def simulated_room(tables: int, seed: int = 1, prefix: str = "sim") -> Iterator[Played]:
    """``tables`` tables of one cashier (the three games, 2..10 seats, every fourth a
    live dealer's), one round of one table at a time, round robin, for ever."""
    cashier = SimulatedCashier(random.Random(seed))
    playing = [SimulatedTable(f"{prefix}-{i}", GAMES[i % len(GAMES)], 2 + 2 * (i % 5), seed=f"{seed}/{i}",
                              live_dealer=i % 4 == 3, cashier=cashier)
               for i in range(tables)]
    while True:
        for table in playing:
            events = table.round()
            yield Played(table.table_id, events, cashier.take())


class PlayedRoom(NamedTuple):
    """A simulated room's streams, gathered."""

    tables: dict[str, list[Event]]                # table id -> its stream
    accounts: dict[str, list[AccountEvent]]       # player -> his account's stream


def play_room(tables: int, *, rounds: int = 0, events: int = 0, seed: int = 1, prefix: str = "sim") -> PlayedRoom:
    """:func:`simulated_room` played until ``rounds`` rounds or ``events`` table events
    (whichever is given and comes first)."""
    played = PlayedRoom(defaultdict(list), defaultdict(list))
    count = stored = 0
    for table_id, new, accounts in simulated_room(tables, seed, prefix):
        played.tables[table_id] += new
        for player, account_events in accounts.items():
            played.accounts[player] += account_events
        count += 1
        stored += len(new)
        if (rounds and count >= rounds) or (events and stored >= events):
            return played
    raise AssertionError("simulated_room never ends")  # pragma: no cover
