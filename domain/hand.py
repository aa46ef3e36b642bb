"""The state of one hand in play: who is in, their cards and chips, the betting round.

Plain mutable objects with slots: the aggregate changes them only by applying events
(``table.py``), and the rules read them (``betting.py``, ``dealing.py``, ``showdown.py``).
"""

from __future__ import annotations

from .cards import RANK_DIGIT
from .deck import CommittedDeck, Deck
from .hand_ranking import high_value, low_value
from .record import Record


class HandPlayer(Record):
    FIELDS = (
        "seat", "player", "start_stack", "stack", "cards", "up", "streets",
        "ups", "up_ranks", "up_suits",
        "posted", "dealt_in", "folded", "all_in", "protected", "ante",
        "contributed", "round_bet", "acted_at", "showed", "mucked",
    )
    __slots__ = FIELDS

    def __init__(self, seat: int, player: str, stack: int) -> None:
        self.seat = seat
        self.player = player
        self.start_stack = stack
        self.stack = stack            # chips behind, not yet put in
        self.cards: list[int] = []    # own cards in the order received
        self.up: list[bool] = []      # face of each card
        self.streets: list[int] = []  # the street each card came on
        self.ups: list[int] = []      # the cards of ``cards`` that are face up, in order
        self.up_ranks = 0             # their rank_pattern (a memo key, kept as they come)
        self.up_suits = 0             # their suits as a bit mask
        self.posted = False           # posted the ante (R5)
        self.dealt_in = False
        self.folded = False
        self.all_in = False           # puts in no more chips: all-in or protected (R19)
        self.protected = False        # R19: a timeout made him all-in for what he put in
        self.ante = 0
        self.contributed = 0          # all chips put in this hand, the ante included
        self.round_bet = 0            # chips put in during the current betting round
        self.acted_at: int | None = None  # the round's reopen count when he last acted
        self.showed = False
        self.mucked = False

    def _blank(self) -> HandPlayer:
        return HandPlayer(self.seat, self.player, self.stack)

    @property
    def live(self) -> bool:
        """Dealt in and not folded: still contesting the pot."""
        return self.dealt_in and not self.folded

    @property
    def can_act(self) -> bool:
        return self.dealt_in and not self.folded and not self.all_in

    def add_up_card(self, card: int) -> None:
        """One more card face up (apply calls it; the cards lists are its own job)."""
        self.ups.append(card)
        self.up_ranks += RANK_DIGIT[card]
        self.up_suits |= 1 << (card & 3)

    def put_in(self, amount: int) -> None:
        self.stack -= amount
        self.contributed += amount
        self.round_bet += amount
        if self.stack == 0:
            self.all_in = True


class HandState(Record):
    FIELDS = (
        "hand_no", "button", "players", "order", "deck", "pos", "consumed", "burns",
        "community", "community_streets", "committed",
        "phase", "street", "current_bet", "raise_count", "reopen", "open_pair",
        "big_made", "bring_in_pending", "round_first", "round_aggressor", "round_acted",
        "first_round_over", "showdown_lead", "showdown_order", "skip_last_round",
        "to_act", "turn_kind", "turn_options", "_in_order", "_live", "_actors", "_clockwise", "_values",
    )
    __slots__ = FIELDS

    def __init__(self, hand_no: int, button: int, players: list[HandPlayer],
                 committed: CommittedDeck | None = None) -> None:
        self.hand_no = hand_no
        self.button = button
        self.players = {p.seat: p for p in players}
        self.order: list[int] = []     # dealing order, left of the button first
        self._in_order: list[HandPlayer] = []   # the players of ``order``
        self._clockwise: dict[int, tuple[HandPlayer, ...]] | None = None
        self.set_order([p.seat for p in players])
        # the hand's deck and its commitment (R32); an empty one at a live dealer's table
        self.committed = CommittedDeck(b"", []) if committed is None else committed
        self.deck: Deck = self.committed   # dealt from, top first (R17: the stub); ``pos``: the next card's place
        self.pos = 0
        self.consumed = 0              # cards taken from the 52 (dealt and burned)
        self.burns: list[int] = []     # burned cards still set aside (R17 may reshuffle them)
        self.community: list[int] = []
        self.community_streets: list[int] = []
        self.phase = "ante"            # ante | deal | betting | showdown
        self.street = -1
        self.current_bet = 0
        self.raise_count = 0           # full bets and raises this round (R14)
        self.reopen = 0                # bumped by every full bet or raise (R16)
        self.open_pair = False         # R12
        self.big_made = False          # R12: a big bet or raise was made this round
        self.bring_in_pending = False
        self.round_first: int | None = None
        self.round_aggressor: int | None = None
        self.round_acted = False
        self.first_round_over = False  # R27: no rake on a hand ending in the first round
        self.showdown_lead: int | None = None   # R21: who shows first
        self.showdown_order: list[int] = []
        self.skip_last_round = False   # R28: last cards mixed up
        self.to_act: int | None = None
        self.turn_kind: str | None = None
        self.turn_options: list[str] | None = None   # what the player to act may do
        self._live: list[HandPlayer] | None = None
        self._actors: list[HandPlayer] | None = None
        self._values: dict[int, tuple[int, int | None]] = {}   # by seat: see values_of

    def _blank(self) -> HandState:
        return HandState(self.hand_no, self.button, [])

    def set_order(self, seats: list[int]) -> None:
        self.order = seats
        self._in_order = [self.players[s] for s in seats]
        self._clockwise = None

    # --- queries ----------------------------------------------------------------------

    def dealt(self) -> list[HandPlayer]:
        return [p for p in self._in_order if p.dealt_in]

    def changed(self) -> None:
        """Forget the cached player lists: applying an event that folds a player, makes
        him all-in or deals him in calls it."""
        self._live = self._actors = None

    def live(self) -> list[HandPlayer]:
        if self._live is None:
            self._live = [p for p in self._in_order if p.live]
        return self._live

    def actors(self) -> list[HandPlayer]:
        if self._actors is None:
            self._actors = [p for p in self.live() if not p.all_in]
        return self._actors

    def clockwise_from(self, seat: int) -> tuple[HandPlayer, ...]:
        """Every player in dealing order, starting just after ``seat`` (``seat`` last)."""
        if self._clockwise is None:
            # worked out once per order, because the betting asks after every action
            players = self._in_order
            self._clockwise = {
                p.seat: tuple(players[i + 1 :] + players[: i + 1]) for i, p in enumerate(players)
            }
        return self._clockwise[seat]

    def values_of(self, p: HandPlayer, hi_lo: bool) -> tuple[int, int | None]:
        """The high value of his cards and the community's, and in a hi/lo game the low
        value (None: no low), worked out once at the showdown (his HandShown describes
        them, the settlement compares them), when no card is to come."""
        values = self._values.get(p.seat)
        if values is None:
            cards = p.cards + self.community
            values = self._values[p.seat] = (high_value(cards), low_value(cards) if hi_lo else None)
        return values

    def heads_up(self) -> bool:
        """R14: only two players left in the hand, no cap."""
        return len(self.live()) == 2
