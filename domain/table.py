"""The table aggregate: seats, chips and one hand after another.

``Table.execute(command, by=sender)`` checks who sent the command (his powers,
domain/authority.py; his command id, domain/command_ids.py) and the command against the
rules, and returns the events it causes, already applied; a refused command raises
:class:`DomainError` and leaves the table exactly as it was.  ``Table.apply(event)`` is
the only code that changes state, so ``Table.replay(events)`` rebuilds the identical
table (event sourcing).

The domain is pure: the clock (``now_ms``) and the deck seed come in with the commands.

Rules R3-R5, R15, R18-R20, R28 and R34 (docs/rules.md); the rest in the modules it calls
(betting, dealing, showdown, pots).  The floor's commands (an operator's: configure,
pause, resume, close a table, sit a player out, remove him) are here too.
"""

from __future__ import annotations

import copy

from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from . import announcements, buy_ins, command_ids, commitment, waiting_list
from .authority import Sender, authorize
from .buy_ins import SeatChips
from .betting import bet_sizes, decide_action, next_to_act, options, round_complete, uncalled
from .cards import DECK_SIZE, BadCard, RANKS, parse, parse_many, show, show_many
from .commands import (
    Act, BuyIn, CloseTable, Command, ConfigureTable, DealStreet, JoinWaitingList, Leave, LeaveWaitingList, Muck,
    OpenTable, PauseTable, PostAnte, RemovePlayer, ResumeTable, ScheduleHand, Show, SitDown, SitOut, SitOutPlayer,
    SkipAnte, StartHand, Timeout,
)
from .config import TableConfig, too_many_players, validate
from .deck import MAX_ENTROPY_BYTES, CommittedDeck, ListedDeck, reach, scripted_key, seed_hash
from .dealing import best_board, bring_in_seat, deal_first, deal_street, door_card, first_to_act
from .errors import (
    ALREADY_LEAVING,
    ALREADY_OPEN,
    ALREADY_SEATED,
    AUTO_DEALT,
    BAD_CARD,
    BAD_CONFIG,
    BAD_DEAL,
    BAD_ENTROPY,
    BAD_SEED,
    DUPLICATE_CARD,
    HAND_IN_PROGRESS,
    ILLEGAL_ACTION,
    NO_CHANGE,
    NO_DECK,
    NO_HAND,
    NOT_DEALING_NOW,
    NOT_ENOUGH_PLAYERS,
    NOT_IN_HAND,
    NOT_YOUR_TURN,
    SEAT_TAKEN,
    STALE_TIMEOUT,
    TABLE_CLOSED,
    TABLE_NOT_OPEN,
    UNKNOWN_COMMAND,
    UNKNOWN_PLAYER,
    UNKNOWN_SEAT,
    DomainError,
    quoted,
)
from .events import (
    Acted, ActionName, Announced, AntePosted, AnteSkipped, AntesCollected, CardProof, CardsDealt, ChipsBought,
    DealtCard,
    EndedOn, Event, HandCancelled, HandEnded, HandMucked, HandSeat, HandShown, HandStarted, LastCardsExposed,
    LeaveRequested, LeftReason, PauseEnded, PauseStarted, PlayerLeft, PlayerSatDown, PotAwarded, RoundEnded,
    RoundStarted, SeatOffered, ShowdownStarted, SitOutChanged, SitOutReason, TableClosed, TableClosing,
    TableConfigured, TableOpened, TablePaused, TableResumed, TimedOut, TurnStarted, WaitingListJoined,
    WaitingListLeft,
)
from .games import GAMES, Game
from .hand import HandPlayer, HandState
from .record import Record
from .hand_ranking import describe_high, describe_low
from .names import check_name
from .showdown import check_muck, settle, showdown_order


MIN_PLAYERS: Final = 2          # ready seats a hand needs (R5)
MAX_PAUSE_MS: Final = 600_000   # the longest pause before a hand (ScheduleHand)


class SeatState(Record):
    FIELDS = ("player", "stack", "sitting_out", "auto_ante", "leaving", "out_since_ms", "out_reason",
              "leave_reason")
    __slots__ = FIELDS

    def __init__(self, player: str, auto_ante: bool) -> None:
        self.player = player
        self.stack = 0
        self.sitting_out = False
        self.auto_ante = auto_ante
        self.leaving = False
        self.out_since_ms = 0                 # R34: when he was sat out (while sitting_out)
        self.out_reason: SitOutReason = "own"
        self.leave_reason: LeftReason = "own"   # while leaving: why (his PlayerLeft says it)

    def _blank(self) -> SeatState:
        return SeatState(self.player, self.auto_ante)


class Table:
    """One table: its state is the attributes named in ``_STATE`` (``_events`` only
    collects what the running command emits)."""

    def __init__(self) -> None:
        self.table_id: str | None = None
        self.config: TableConfig | None = None
        self.game: Game | None = None
        self.seats: dict[int, SeatState] = {}
        self.button: int | None = None
        self.hand_no = 0
        self.turn = 0
        self.hand: HandState | None = None
        self.version = 0              # events applied so far
        self.last_command_ids: dict[str, int] = {}   # per sender key, his highest command id
        self.last_turn: TurnStarted | None = None   # the hand's latest turn (views: its deadline)
        self.pause_turn: int | None = None   # the open pause before the next hand (its turn number)
        self.pause_served = False            # a pause ended since the last hand started
        self.pause_waiting = False           # the open pause waits for a sit-out's limit (R34) or a seat offer
        self.next_config: TableConfig | None = None   # an operator's settings for the next hand
        self.paused = False                  # an operator paused the table: no new hand
        self.closing = False                 # closed during a hand: closes when it ends
        self.closed = False                  # every command is refused (table_closed)
        self.waiting: list[str] = []         # the waiting list, first first (domain/waiting_list.py)
        self.offer: SeatOffered | None = None   # the seat offered to the first waiting, while open
        self._events: list[Event] = []

    # --- event sourcing ---------------------------------------------------------------

    @classmethod
    def replay(cls, events: Iterable[Event]) -> Table:
        table = cls()
        for event in events:
            table.apply(event)
        return table

    def apply(self, event: Event) -> None:
        self._change(event)
        command_id = event.command_id
        if command_id is not None:
            command_ids.remember(self.last_command_ids, command_id, self._paid_by(event, command_id))

    def _change(self, event: Event) -> None:
        """What ``event`` does to the table (``apply`` without the event's command id)."""
        # the events of every betting round, called directly: compiled, a direct call skips
        # the lookup and the argument checks of a call through _APPLY (a few % of a hand)
        if type(event) is _TURN_STARTED:
            _turn_started(self, event)
        elif type(event) is _ACTED:
            _acted(self, event)
        elif type(event) is _CARDS_DEALT:
            _cards_dealt(self, event)
        elif type(event) is _ROUND_STARTED:
            _round_started(self, event)
        elif type(event) is _ROUND_ENDED:
            _round_ended(self, event)
        elif type(event) is _ANTE_POSTED:
            _ante_posted(self, event)
        elif type(event) is _POT_AWARDED or type(event) is _ANNOUNCED:
            pass                        # facts that change nothing the rules look at (_nothing)
        else:
            _APPLY[type(event)](self, event)
        self.version += 1

    def _paid_by(self, event: Event, command_id: str) -> str | None:
        """The player a service's buy-in was for (the seat's holder): the cashier numbers
        its buy-ins per player (domain/command_ids.py)."""
        if type(event) is ChipsBought and command_id.startswith("service.") and event.seat in self.seats:
            return self.seats[event.seat].player
        return None

    def state(self) -> dict[str, Any]:
        """Everything the table knows, as plain data: two tables with equal ``state()``
        are the same table (replay tests, dispute tools)."""
        return {name: _plain(getattr(self, name)) for name in _STATE}

    def execute(self, command: Command, by: Sender | None = None) -> list[Event]:
        """Run one command: the events it caused, or a DomainError and no change.

        ``by`` is the sender the server authenticated; None is a trusted caller inside
        the room (the table service's own hand starts, scripted hands)."""
        handler = _HANDLERS.get(type(command))
        if handler is None:
            raise DomainError(UNKNOWN_COMMAND, f"no such command: {type(command).__name__}")
        command_id = self._admit(command, by)
        self._refuse_if_closed(command)
        self._events = []
        snapshot = self._snapshot() if self._may_fail_midway(command) else None
        try:
            if type(command) is _ACT:   # the most frequent command, called directly (as apply's events)
                self._act(command)
            else:
                handler(self, command)
        except DomainError:
            if snapshot is not None:
                for name, value in snapshot.items():
                    setattr(self, name, value)
            self._events = []
            raise
        events, self._events = self._events, []
        if command_id is not None and events:
            events[0] = msgspec.structs.replace(events[0], command_id=command_id)
            command_ids.remember(self.last_command_ids, command_id, self._paid_by(events[0], command_id))
        return events

    def _admit(self, command: Command, by: Sender | None) -> str | None:
        """May ``by`` give this command, and under which id is it stored?  A trusted
        command (no sender) carries no id."""
        if by is None:
            if command.command_id is not None:
                command_ids.none_without_sender(command.command_id)
            return None
        holders = {seat: state.player for seat, state in self.seats.items()}
        authorize(command, by, holders, self.config is not None and not self.config.auto_deal)
        player = command.player if isinstance(command, BuyIn) and by.role == "service" else None
        return command_ids.next_id(self.last_command_ids, by, command.command_id, command.now_ms, player)

    def _refuse_if_closed(self, command: Command) -> None:
        """A closed table refuses everything; a closing one lets only its last hand
        (and leaving) go on."""
        if self.closed or (self.closing and isinstance(command, _REFUSED_WHILE_CLOSING)):
            state = "closed" if self.closed else "closing"
            raise DomainError(TABLE_CLOSED, f"table {self.table_id} is {state}")

    def _emit(self, event: Event) -> None:
        # an event the rules just made has no command id yet (execute gives the first its
        # command's, and remembers it): nothing of apply's to do with it
        self._change(event)
        self._events.append(event)

    def _may_fail_midway(self, command: Command) -> bool:
        """Only a scripted deck shorter than 52 cards can refuse a command after its
        first events (``deck_too_short`` while dealing); such commands run on a
        snapshot.  Every other refusal is decided before the first event (a StartHand
        during a hand is refused at once)."""
        hand = self.hand
        if hand is not None:
            return 0 < hand.committed.size() < DECK_SIZE
        return type(command) is StartHand and command.deck is not None and len(command.deck) < DECK_SIZE

    def _snapshot(self) -> dict[str, Any]:
        """A deep copy of the state; the config and game rules are immutable, and shared."""
        shared = {id(self.config): self.config, id(self.game): self.game}
        return copy.deepcopy({name: getattr(self, name) for name in _STATE}, shared)

    # --- small helpers ----------------------------------------------------------------

    def _require_config(self) -> TableConfig:
        if self.config is None:
            raise DomainError(TABLE_NOT_OPEN, "the table has not been opened")
        return self.config

    def _seat(self, seat: int) -> SeatState:
        self._require_config()
        state = self.seats.get(seat)
        if state is None:
            raise DomainError(UNKNOWN_SEAT, f"nobody sits in seat {seat}")
        return state

    def _hand(self) -> HandState:
        if self.hand is None:
            raise DomainError(NO_HAND, "no hand is being played")
        return self.hand

    def _in_hand(self, seat: int) -> HandPlayer:
        self._seat(seat)
        hand = self._hand()
        p = hand.players.get(seat)
        if p is None or not p.dealt_in and hand.phase != "ante":
            raise DomainError(NOT_IN_HAND, f"seat {seat} is not in this hand")
        return p

    def _deadline(self, command: Command, seconds: int) -> int:
        return command.now_ms + seconds * 1000

    # --- commands: seats and chips ----------------------------------------------------

    def _open(self, c: OpenTable) -> None:
        if self.config is not None:
            raise DomainError(ALREADY_OPEN, f"table {self.table_id} is already open")
        check_name(c.table_id, "table id")
        validate(c.config)
        self._emit(TableOpened(table_id=c.table_id, config=c.config))

    def _sit_down(self, c: SitDown) -> None:
        config = self._require_config()
        check_name(c.player, "player name")
        if not 0 <= c.seat < config.seat_count:
            raise DomainError(UNKNOWN_SEAT, f"seats are 0..{config.seat_count - 1}, not {c.seat}")
        if c.seat in self.seats:
            raise DomainError(SEAT_TAKEN, f"seat {c.seat} is taken")
        if len(self.seats) >= config.max_players:
            raise too_many_players(config.game)
        if any(s.player == c.player for s in self.seats.values()):
            raise DomainError(ALREADY_SEATED, f"player {c.player!r} already sits at this table")
        waiting_list.check_sit_down(self.waiting, self.offer, c.player, c.seat)
        self._emit(PlayerSatDown(seat=c.seat, player=c.player, auto_ante=c.auto_ante))
        if c.player in self.waiting:
            self._emit(WaitingListLeft(player=c.player, reason="seated"))
            self._offer_seat(c)

    def _buy_in(self, c: BuyIn) -> None:
        config = self._require_config()
        seat = self.seats.get(c.seat)
        in_hand = self.hand is not None and c.seat in self.hand.players
        table_chips = sum(s.stack for s in self.seats.values())
        buy_ins.check(config, SeatChips(c.seat, seat.player, seat.stack, in_hand) if seat else None,
                      table_chips, c)
        self._emit(ChipsBought(seat=c.seat, amount=c.amount))
        self._end_sit_out_pause()

    def _sit_out(self, c: SitOut) -> None:
        self._set_sitting_out(c, c.seat, c.sitting_out, "own")

    def _sit_out_player(self, c: SitOutPlayer) -> None:
        """R34: the floor sits a player out, as his own SitOut would."""
        self._set_sitting_out(c, self._seat_of(c.player), True, "operator")

    def _set_sitting_out(self, c: Command, seat_no: int, sitting_out: bool, reason: SitOutReason) -> None:
        seat = self._seat(seat_no)
        if seat.sitting_out == sitting_out:
            raise DomainError(NO_CHANGE, f"seat {seat_no} is already {'out' if sitting_out else 'in'}")
        self._emit(SitOutChanged(seat=seat_no, sitting_out=sitting_out, reason=reason,
                                 since_ms=c.now_ms if sitting_out else 0))
        self._end_sit_out_pause()

    def _seat_of(self, player: str) -> int:
        self._require_config()
        seat = next((s for s, state in self.seats.items() if state.player == player), None)
        if seat is None:
            raise DomainError(UNKNOWN_PLAYER, f"no player {quoted(player)} sits at this table")
        return seat

    def _leave(self, c: Leave) -> None:
        self._leave_seat(c, c.seat, "own")

    def _remove_player(self, c: RemovePlayer) -> None:
        """R34: the floor removes a player, as his own Leave would (mid-hand: folded)."""
        self._leave_seat(c, self._seat_of(c.player), "removed")

    def _leave_seat(self, c: Command, seat_no: int, reason: LeftReason) -> None:
        """R3: leaving between hands cashes out at once; leaving during a hand folds it
        (an all-in hand stays in) and cashes out when the hand ends."""
        seat = self._seat(seat_no)
        if seat.leaving:
            raise DomainError(ALREADY_LEAVING, f"seat {seat_no} is already leaving")
        hand = self.hand
        p = hand.players.get(seat_no) if hand else None
        if hand is None or p is None:
            self._emit(PlayerLeft(seat=seat_no, player=seat.player, cashed_out=seat.stack, reason=reason))
        elif hand.phase == "ante" and not p.posted:
            self._emit(AnteSkipped(seat=seat_no))
            self._emit(PlayerLeft(seat=seat_no, player=seat.player, cashed_out=p.stack, reason=reason))
            self._after_ante(c)
        else:
            was_live, was_turn = p.live, hand.to_act == seat_no and hand.turn_kind == "act"
            self._emit(LeaveRequested(seat=seat_no, reason=reason))
            if hand.phase == "ante":
                self._after_ante(c)
            elif was_live and p.folded:
                self._after_fold(c, seat_no, was_turn)
        self._offer_seat(c)

    # --- commands: the waiting list (domain/waiting_list.py) ---------------------------

    def _join_waiting_list(self, c: JoinWaitingList) -> None:
        self._require_config()
        check_name(c.player, "player name")
        waiting_list.check_join(self.waiting, [s.player for s in self.seats.values()], c.player)
        self._emit(WaitingListJoined(player=c.player))
        self._offer_seat(c)

    def _leave_waiting_list(self, c: LeaveWaitingList) -> None:
        self._require_config()
        waiting_list.check_leave(self.waiting, c.player)
        self._emit(WaitingListLeft(player=c.player, reason="own"))
        self._offer_seat(c)

    def _serve_waiting_list(self, c: Command) -> None:
        """Between hands: an offer that passed unanswered takes its player off the list,
        and a free seat goes to the next (the table's clock is the command's)."""
        offer = self.offer
        if offer is not None and waiting_list.passed(offer, c.now_ms):
            self._emit(WaitingListLeft(player=offer.player, reason="offer_passed"))
        self._offer_seat(c)

    def _offer_seat(self, c: Command) -> None:
        """A free seat, someone waiting and no offer open: offer it to the first."""
        config = self._require_config()
        if self.closing or self.closed or not self.waiting or self.offer is not None:
            return                  # nobody to offer a seat to (what next_offer says), found cheaply
        seat = waiting_list.free_seat(self.seats, config.seat_count, config.max_players)
        player = waiting_list.next_offer(self.waiting, self.offer, seat)
        if player is not None and seat is not None:
            self._emit(SeatOffered(player=player, seat=seat,
                                   until_ms=self._deadline(c, config.seat_offer_seconds)))

    # --- commands: the floor (an operator's; authority.py) -----------------------------

    def _configure(self, c: ConfigureTable) -> None:
        """New settings, validated as OpenTable's; in force from the next hand (at once
        between hands).  The game, the seats and live dealing stay as opened: another
        game is another table (a decision: seats and hands would not fit it)."""
        config = self._require_config()
        validate(c.config)
        fixed = [name for name in ("game", "seats", "auto_deal") if getattr(c.config, name) != getattr(config, name)]
        if fixed:
            raise DomainError(BAD_CONFIG, f"{', '.join(fixed)} cannot change: open another table")
        if c.config == (self.next_config or config):
            raise DomainError(NO_CHANGE, "the table has these settings already")
        self._emit(TableConfigured(config=c.config))

    def _pause_table(self, c: PauseTable) -> None:
        self._require_config()
        if self.paused:
            raise DomainError(NO_CHANGE, "the table is paused already")
        self._emit(TablePaused())

    def _resume_table(self, c: ResumeTable) -> None:
        self._require_config()
        if not self.paused:
            raise DomainError(NO_CHANGE, "the table is not paused")
        self._emit(TableResumed())

    def _close_table(self, c: CloseTable) -> None:
        """Between hands: every seat cashed out and closed at once; during a hand: when
        it ends (``_emit_departures``)."""
        self._require_config()
        if self.closing:
            raise DomainError(NO_CHANGE, "the table closes when its hand ends")
        if self.hand is not None:
            self._emit(TableClosing())
        else:
            self._close_now()

    def _close_now(self) -> None:
        for seat, state in sorted(self.seats.items()):
            self._emit(PlayerLeft(seat=seat, player=state.player, cashed_out=state.stack, reason="table_closed"))
        for player in list(self.waiting):
            self._emit(WaitingListLeft(player=player, reason="table_closed"))
        self._emit(TableClosed())

    # --- commands: a hand -------------------------------------------------------------

    def ready_seats(self) -> list[int]:
        """The seats that would be dealt in now: a player with chips, not sitting out,
        not leaving (a hand needs MIN_PLAYERS of them, R5)."""
        return sorted(s for s, st in self.seats.items() if st.stack > 0 and not st.sitting_out and not st.leaving)

    def next_hand_due(self) -> bool:
        """Is the next hand due (R5)? An online table (``auto_deal``) with no hand under
        way, no pause open, not paused or closed by the floor, and at least MIN_PLAYERS
        ready seats: its service sends the StartHand, or first a ScheduleHand if it
        pauses between hands and no pause ended since the last hand (``pause_served``);
        a live dealer's table waits for the dealer."""
        return self._idle() and len(self.ready_seats()) >= MIN_PLAYERS

    def next_pause_due(self) -> bool:
        """R34: is a pause for sat-out players, or for a seat offer, due?  An idle
        online table that deals no hand while someone sits out or a seat is offered: its
        service sends a ScheduleHand, and the table makes the pause last until the first
        sat-out seat passes the table's limit (``sit_out_seconds``) or the offer passes;
        the timer's Timeout for it removes every seat past the limit and passes the
        offer on.  The table has no clock of its own: so it keeps ONE timer, the pause's
        (docs/design/timer.md); a hand that becomes possible ends the pause at once."""
        return self._idle() and len(self.ready_seats()) < MIN_PLAYERS and (self.offer is not None or any(
            state.sitting_out for state in self.seats.values()))

    def _idle(self) -> bool:
        """An online table, open for play, with no hand under way and no pause open."""
        config = self.config
        return (config is not None and config.auto_deal and self.hand is None and self.pause_turn is None
                and not self.paused and not self.closed)

    def _schedule_hand(self, c: ScheduleHand) -> None:
        """Open the pause before the next hand: a turn of its own, ended by the timer.
        R34: when no hand can be dealt only because players sit out, the pause the
        table needs instead (``next_pause_due``; the service's ``pause_ms`` is not used)."""
        self._require_config()
        if self.hand is not None:
            raise DomainError(HAND_IN_PROGRESS, f"hand {self.hand_no} is still being played")
        if self.pause_turn is not None:
            raise DomainError(NO_CHANGE, f"the pause {self.pause_turn} is already open")
        if self.next_pause_due():
            self._open_waiting_pause(c)
            return
        if not self.next_hand_due():
            raise DomainError(NOT_ENOUGH_PLAYERS, "no hand is due: it needs two ready players at an online table (R5)")
        if not isinstance(c.pause_ms, int) or not 0 < c.pause_ms <= MAX_PAUSE_MS:
            raise DomainError(BAD_CONFIG, f"a pause is 1..{MAX_PAUSE_MS} ms, not {c.pause_ms}")
        self._emit(PauseStarted(turn=self.turn + 1, deadline_ms=c.now_ms + c.pause_ms, pause_ms=c.pause_ms))

    def _open_waiting_pause(self, c: ScheduleHand) -> None:
        """R34: pause until the first sat-out seat passes the limit, or the open seat
        offer passes, whichever comes first (1 ms if one has)."""
        out = [self._out_until(s) for s in self.seats.values() if s.sitting_out]
        offered = self.offer.until_ms if self.offer is not None else None
        first = min(out + ([] if offered is None else [offered]))
        deadline = max(c.now_ms + 1, first)
        self._emit(PauseStarted(turn=self.turn + 1, deadline_ms=deadline, pause_ms=deadline - c.now_ms,
                                purpose="seat_offer" if first == offered else "sit_out_limit"))

    def _out_until(self, seat: SeatState) -> int:
        """R34: when a sat-out seat passes the table's limit and is removed."""
        return seat.out_since_ms + self._require_config().sit_out_seconds * 1000

    def _end_sit_out_pause(self) -> None:
        """R34: a pause for sat-out players ends at once when a hand can be dealt after
        all (a player sat in, chips came): the table deals without waiting for it."""
        if self.pause_turn is not None and self.pause_waiting and len(self.ready_seats()) >= MIN_PLAYERS:
            self._emit(PauseEnded(turn=self.pause_turn))

    def _remove_absent(self, c: Command) -> None:
        """R34: every seat sat out past the table's limit is removed and cashed out.
        Between hands only: when a hand ends and when a pause ends."""
        absent = [seat for seat, state in self.seats.items()
                  if state.sitting_out and not state.leaving and self._out_until(state) <= c.now_ms]
        for seat in sorted(absent):        # sorting these alone (usually none) is cheaper than all seats
            state = self.seats[seat]
            self._emit(PlayerLeft(seat=seat, player=state.player, cashed_out=state.stack,
                                  reason="sat_out_too_long"))

    def _start_hand(self, c: StartHand) -> None:
        config = self._require_config()
        if self.hand is not None:
            raise DomainError(HAND_IN_PROGRESS, f"hand {self.hand_no} is still being played")
        ready = self.ready_seats()
        if len(ready) < MIN_PLAYERS:
            raise DomainError(NOT_ENOUGH_PLAYERS, "a hand needs two players with chips (R5)")
        button = self._next_button(ready) if c.button is None else c.button
        if c.button is not None and c.button not in range(config.seat_count):
            raise DomainError(UNKNOWN_SEAT, f"no seat {c.button} for the button")
        deck, seed_hex, commit = self._deck_for(c)
        order = [s for s in ready if s > button] + [s for s in ready if s <= button]
        self._emit(HandStarted(
            hand_no=self.hand_no + 1, button=button, commitment=commit, deck=deck, seed=seed_hex,
            seats=[HandSeat(s, self.seats[s].player, self.seats[s].stack) for s in order],
        ))
        for s in order:
            if self.seats[s].auto_ante:
                self._post_ante_for(s)
        if not self._after_ante(c):
            self._emit(_TURN_STARTED(turn=self.turn + 1, seat=None, kind="ante",
                                   deadline_ms=self._deadline(c, config.ante_seconds)))

    def _deck_for(self, c: StartHand) -> tuple[list[str], str | None, str]:
        """The hand's deck (a scripted order, or none: the seed fixes it), its seed and
        the seed's hash (R32); a live dealer's table has none of them."""
        seed = _seed(c.seed) if c.seed is not None else None
        if c.deck is not None:
            try:
                cards = parse_many(c.deck)
            except BadCard as e:
                raise DomainError(BAD_CARD, str(e)) from None
            if len(set(cards)) != len(cards):
                dup = next(t for t in c.deck if c.deck.count(t) > 1)
                raise DomainError(DUPLICATE_CARD, f"{dup} appears twice in the deck")
            return list(c.deck), c.seed, seed_hash(seed if seed is not None else scripted_key(c.deck))
        if seed is not None:
            return [], c.seed, seed_hash(seed)
        if self.config is not None and self.config.auto_deal:
            raise DomainError(NO_DECK, "an online table needs a seed to deal from")
        return [], None, ""

    def _next_button(self, ready: list[int]) -> int:
        """R4: one occupied seat clockwise after every hand (the first hand: the seat
        before the lowest ready seat, so that seat is dealt first)."""
        occupied = sorted(self.seats)
        if self.button is None:
            return ready[-1]
        later = [s for s in occupied if s > self.button]
        return later[0] if later else occupied[0]

    def _post_ante(self, c: PostAnte) -> None:
        p = self._in_hand(c.seat)
        hand = self._hand()
        if hand.phase != "ante" or p.posted:
            raise DomainError(ILLEGAL_ACTION, f"seat {c.seat} has no ante to post now")
        self._post_ante_for(c.seat, _entropy(c.entropy))
        self._after_ante(c)

    def _post_ante_for(self, seat: int, entropy: str | None = None) -> None:
        p = self._hand().players[seat]
        amount = min(self._require_config().stakes.ante, p.stack)
        self._emit(_ANTE_POSTED(seat=seat, amount=amount, all_in=amount == p.stack, entropy=entropy))

    def _skip_ante(self, c: SkipAnte) -> None:
        p = self._in_hand(c.seat)
        hand = self._hand()
        if hand.phase != "ante" or p.posted:
            raise DomainError(ILLEGAL_ACTION, f"seat {c.seat} cannot sit out this hand now")
        self._emit(AnteSkipped(seat=c.seat))
        self._after_ante(c)

    def _after_ante(self, c: Command) -> bool:
        """Close the ante window once every seat has posted or sat out (R5)."""
        hand = self._hand()
        if any(not p.posted and not p.folded for p in hand.players.values()):
            return False
        self._close_antes(c)
        return True

    def _close_antes(self, c: Command) -> None:
        hand = self._hand()
        posted = [s for s in hand.order if hand.players[s].posted and not hand.players[s].folded]
        if len(posted) < 2:
            refunds = {p.seat: p.contributed for p in hand.players.values() if p.contributed}
            self._emit(HandCancelled(hand_no=hand.hand_no, reason="fewer than two antes (R5)", refunds=refunds))
            self._emit_departures(c)
            return
        deck = hand.committed       # R32: the entropy is in, the deck is fixed: commit to it
        assert self.game is not None
        deck.fix(commitment.FORMAT, reach(self.game, len(posted)))
        self._emit(AntesCollected(seats=posted, deck_root=deck.root(), deck_size=deck.span(),
                                  deck_format=deck.format(), deck_leaves=deck.leaves()))
        if self._require_config().auto_deal:
            self._deal(c)

    def _deal_street_command(self, c: DealStreet) -> None:
        config = self._require_config()
        hand = self._hand()
        if config.auto_deal:
            raise DomainError(AUTO_DEALT, "this table deals by itself")
        if hand.phase != "deal":
            raise DomainError(NOT_DEALING_NOW, "no street is due to be dealt")
        if c.cards is None and not hand.deck.size():
            raise DomainError(BAD_DEAL, "a live dealer's street must carry its cards")
        self._deal(c, c)

    def _deal(self, c: Command, console: DealStreet | None = None) -> None:
        """Deal the next street, announce, and open its betting round; streets without
        betting (everybody all-in) follow one another up to the showdown."""
        hand = self._hand()
        game = self._game()
        while True:
            street = hand.street + 1
            if console is not None and console.cards is not None:
                event = self._console_cards(street, console)
            elif street == 0:
                event = deal_first(hand, game)
            else:
                event = deal_street(hand, game, street)
            exposure = self._exposure(street, console) if console is not None else None
            if exposure is not None and console is not None:
                event = msgspec.structs.replace(event, cards=[
                    DealtCard(d.seat, d.card, d.up or d.seat in console.exposed, d.proof) for d in event.cards
                ])
            self._emit(event)
            if exposure is not None:        # the turned cards are known once dealt
                last = [hand.players[d.seat].cards[-1] for d in exposure.turned]
                self._emit(msgspec.structs.replace(exposure, turned=[
                    DealtCard(d.seat, show(card), True, hand.committed.proof(card))
                    for d, card in zip(exposure.turned, last)
                ]))
            console = None
            self._announce(street)
            if self._open_round(c):
                return
            if hand.street >= game.last_street or hand.skip_last_round:
                self._showdown(c)
                return
            if not self._require_config().auto_deal:
                return

    def _console_cards(self, street: int, console: DealStreet) -> CardsDealt:
        """R28: a live dealer's console reports the street's cards in dealing order."""
        hand = self._hand()
        game = self._game()
        try:
            cards = parse_many(console.cards or [])
        except BadCard as e:
            raise DomainError(BAD_CARD, str(e)) from None
        seen = {c for p in hand.players.values() for c in p.cards} | set(hand.community)
        if len(set(cards)) != len(cards) or seen & set(cards):
            raise DomainError(DUPLICATE_CARD, "a card reported twice in this hand")
        live = hand.live() if street else hand.dealt()
        faces = game.streets[street].faces
        if street and len(cards) == 1 and len(live) > 1:
            return CardsDealt(street=street, community=show(cards[0]))
        if len(cards) != len(live) * len(faces):
            raise DomainError(BAD_DEAL, f"expected {len(live) * len(faces)} cards for this street")
        dealt = [
            DealtCard(p.seat, show(cards[r * len(live) + i]), faces[r])
            for r in range(len(faces)) for i, p in enumerate(live)
        ]
        return CardsDealt(street=street, cards=dealt)

    def _exposure(self, street: int, console: DealStreet) -> LastCardsExposed | None:
        """R28: one exposed 7th card turns up all the others' (unless its owner was
        all-in); mixed-up last cards skip the last betting round.  Checked before the
        street is dealt, applied right after it."""
        if not console.exposed and not console.mixed:
            return None
        hand = self._hand()
        game = self._game()
        live = {p.seat for p in hand.live()}
        if street != game.last_street or game.streets[street].faces[0] or not set(console.exposed) <= live:
            raise DomainError(BAD_DEAL, "only a 7th card of a player in the hand can be exposed (R28)")
        turned: list[DealtCard] = []
        if any(hand.players[s].can_act for s in console.exposed):
            turned = [DealtCard(s, None, True) for s in sorted(live - set(console.exposed))]
        return LastCardsExposed(exposed_seat=console.exposed[0] if console.exposed else None,
                                turned=turned, skip_betting=console.mixed)

    def _announce(self, street: int) -> None:
        """R30/R31: what each player's up cards show, from the second up card on."""
        hand = self._hand()
        if not self._game().streets[street].faces[-1]:
            return
        for p in hand.live():
            said = _announcement(p) if len(p.ups) >= 2 else None
            if said is not None:
                kind, rank, draws, en, de = said
                self._emit(_ANNOUNCED(seat=p.seat, kind=kind, rank=rank, draws=list(draws), en=en, de=de))

    def _open_round(self, c: Command) -> bool:
        """Start the street's betting round if two players can still bet."""
        hand = self._hand()
        if hand.skip_last_round or len(hand.actors()) < 2:
            return False
        if hand.street == 0:
            opener = bring_in_seat(hand)
            first = opener if opener.can_act else next(p for p in hand.clockwise_from(opener.seat) if p.can_act)
            self._emit(_ROUND_STARTED(street=0, opener=opener.seat, first=first.seat, bring_in=True,
                                    door_card=show(door_card(opener))))
            if not opener.can_act:    # R16: all-in from the ante, his bring-in stands in full
                self._emit(_ACTED(seat=opener.seat, action="bring_in", all_in=True, full=False))
        else:
            best, first = first_to_act(hand, self._game())
            open_pair = self._game().streets[hand.street].open_pair_street and any(
                _shows_pair(p) for p in hand.live()
            )
            self._emit(_ROUND_STARTED(street=hand.street, opener=best.seat, first=first.seat, open_pair=open_pair))
        self._start_turn(c, first)
        return True

    def _start_turn(self, c: Command, p: HandPlayer) -> None:
        hand = self.hand
        assert hand is not None and self.config is not None and self.game is not None
        opts = options(hand, p)
        sized = opts[-1] in ("bet", "raise")      # betting.options offers a bet or raise last, if at all
        sizes = ["small", "big"] if sized and len(bet_sizes(hand, self.game, self.config.stakes)) == 2 else []
        self._emit(_TURN_STARTED(
            turn=self.turn + 1, seat=p.seat, kind="act",
            deadline_ms=self._deadline(c, self.config.action_seconds),
            to_call=min(hand.current_bet - p.round_bet, p.stack), options=opts, sizes=sizes,
        ))

    def _act(self, c: Act) -> None:
        hand, seat = self.hand, c.seat
        if hand is None or hand.to_act != seat or hand.turn_kind != "act":
            self._refuse_act(c)
        assert hand is not None and self.config is not None and self.game is not None
        self._emit(decide_action(hand, self.game, self.config.stakes, hand.players[seat], c.action, c.size))
        self._after_action(c, seat)

    def _refuse_act(self, c: Act) -> None:
        """Why an action that is not the awaited one is refused, most basic reason first."""
        self._in_hand(c.seat)
        hand = self._hand()
        if hand.phase != "betting":
            raise DomainError(ILLEGAL_ACTION, "no betting round is open")
        raise DomainError(NOT_YOUR_TURN, f"seat {c.seat} acted, but seat {hand.to_act} is to act")

    def _after_fold(self, c: Command, seat: int, was_turn: bool) -> None:
        """A fold out of turn (a player left or was removed) ends the hand if one player is
        left; else it may change what the player to act may do (R15)."""
        hand = self._hand()
        if was_turn:
            self._after_action(c, seat)
        elif len(hand.live()) == 1:
            if hand.phase == "betting":
                self._close_round()
            self._finish(c, "fold")
        elif hand.phase == "betting" and hand.turn_kind == "act" and hand.to_act is not None:
            self._turn_again(c, hand.players[hand.to_act])

    def _turn_again(self, c: Command, p: HandPlayer) -> None:
        """R15 after a fold out of turn: if nobody left can answer a bet and ``p`` owes
        nothing, the round is over (the rest is dealt without betting); if what he may
        do changed, his turn is opened again with it (the old turn's timeout is stale)."""
        if round_complete(self._hand()):
            self._end_round(c)
        elif self.last_turn is None or options(self._hand(), p) != self.last_turn.options:
            self._start_turn(c, p)

    def _after_action(self, c: Command, seat: int) -> None:
        """R15: after an action the hand is won by fold, or the round goes on, or ends."""
        hand = self.hand
        assert hand is not None and self.config is not None and self.game is not None
        if len(hand.live()) == 1:
            self._close_round()
            self._finish(c, "fold")
            return
        waiting = next_to_act(hand, seat)
        if waiting is not None:
            self._start_turn(c, waiting)
        else:
            self._end_round(c)

    def _end_round(self, c: Command) -> None:
        """The round is over: to the showdown after the last one, else the next street."""
        hand = self._hand()
        assert self.config is not None and self.game is not None
        self._close_round()
        if hand.street >= self.game.last_street or hand.skip_last_round:
            self._showdown(c)
        elif self.config.auto_deal:
            self._deal(c)

    def _close_round(self) -> None:
        hand = self._hand()
        back = uncalled(hand)
        self._emit(_ROUND_ENDED(street=hand.street, returned_seat=back[0] if back else None,
                              returned=back[1] if back else 0))

    def _timeout(self, c: Timeout) -> None:
        config = self._require_config()
        if self.hand is None and self.pause_turn is not None:
            self._end_pause(c)
            return
        hand = self._hand()
        if c.turn != self.turn or hand.turn_kind is None:
            raise DomainError(STALE_TIMEOUT, f"turn {c.turn} is over (R20); the current turn is {self.turn}")
        if c.seat is not None and c.seat != hand.to_act:
            raise DomainError(NOT_YOUR_TURN, f"turn {c.turn} belongs to seat {hand.to_act}, not {c.seat}")
        if hand.turn_kind == "ante":
            for s in hand.order:
                if not hand.players[s].posted and not hand.players[s].folded:
                    self._emit(AnteSkipped(seat=s))
                    self._sit_out_absent(s)
            self._close_antes(c)
            return
        seat = hand.to_act
        assert seat is not None
        p = hand.players[seat]
        if hand.turn_kind == "show":
            self._emit(TimedOut(turn=c.turn, seat=seat, outcome="show"))
            self._sit_out_absent(seat)
            self._show_cards(p)
            self._next_showdown_turn(c)
            return
        opts = options(hand, p)
        action: ActionName | None
        if "bring_in" in opts:
            action = "bring_in"       # R7: the bring-in cannot fold; his timeout posts it
        elif "check" in opts:
            action = "check"          # R19 decision: a free check is taken
        elif config.timeout_policy == "all_in_protection" and p.contributed > p.ante:
            action = None             # R19: protected, all-in for what he has put in
        else:
            action = "fold"
        self._emit(TimedOut(turn=c.turn, seat=seat, outcome="protected" if action is None else action))
        self._sit_out_absent(seat)
        if action is not None:
            self._emit(decide_action(hand, self._game(), config.stakes, p, action, None))
        self._after_action(c, seat)

    def _end_pause(self, c: Timeout) -> None:
        """The timer ends the pause before the next hand (R20: only the pause it was set for)."""
        if c.turn != self.pause_turn:
            raise DomainError(STALE_TIMEOUT, f"turn {c.turn} is over (R20); the pause is turn {self.pause_turn}")
        if c.seat is not None:
            raise DomainError(NOT_YOUR_TURN, f"the pause {c.turn} belongs to no seat, not {c.seat}")
        self._emit(PauseEnded(turn=c.turn))
        self._remove_absent(c)
        self._serve_waiting_list(c)

    def _sit_out_absent(self, seat_no: int) -> None:
        """R34: a player whose turn timed out (any turn: ante, act, show) is sat out
        from the next hand on, until he sits in himself; this hand goes on as R19 says.
        He is out since the turn's deadline: a recorded fact, not the timer's clock."""
        seat, turn = self.seats[seat_no], self.last_turn
        assert turn is not None
        if not seat.sitting_out and not seat.leaving:
            self._emit(SitOutChanged(seat=seat_no, sitting_out=True, reason="timed_out", since_ms=turn.deadline_ms))

    # --- the showdown -----------------------------------------------------------------

    def _showdown(self, c: Command) -> None:
        hand = self._hand()
        lead = hand.showdown_lead
        if lead is None or not hand.players[lead].live:     # no round was played, or the lead left
            lead = best_board(hand, self._game()).seat
        self._emit(ShowdownStarted(order=showdown_order(hand, lead)))
        self._show_cards(hand.players[lead])   # R22 (2026-12): who shows first must show, aggressor or not
        self._next_showdown_turn(c)

    def _show_cards(self, p: HandPlayer) -> None:
        high, low = self._hand().values_of(p, self._game().hi_lo)
        self._emit(HandShown(seat=p.seat, cards=show_many(p.cards), high=describe_high(high),
                             low=None if low is None else describe_low(low), proofs=self._proofs(p)))

    def _proofs(self, p: HandPlayer) -> list[CardProof]:
        """R32: the proofs of his cards (none from a live dealer's physical deck)."""
        deck = self._hand().committed
        return [proof for card in p.cards if (proof := deck.proof(card)) is not None]

    def _next_showdown_turn(self, c: Command) -> None:
        hand = self._hand()
        for seat in hand.showdown_order:
            p = hand.players[seat]
            if not p.showed and not p.mucked:
                self._emit(_TURN_STARTED(turn=self.turn + 1, seat=seat, kind="show", options=["show", "muck"],
                                       deadline_ms=self._deadline(c, self._require_config().showdown_seconds)))
                return
        self._finish(c, "showdown")

    def _show(self, c: Show) -> None:
        p = self._showdown_turn(c.seat)
        self._show_cards(p)
        self._next_showdown_turn(c)

    def _muck(self, c: Muck) -> None:
        p = self._showdown_turn(c.seat)
        hand = self._hand()
        check_muck(hand, c.seat)
        self._emit(HandMucked(seat=c.seat, cards=show_many(p.cards), proofs=self._proofs(p),
                              participants=list(hand.showdown_order)))
        self._next_showdown_turn(c)

    def _showdown_turn(self, seat: int) -> HandPlayer:
        p = self._in_hand(seat)
        hand = self._hand()
        if hand.phase != "showdown":
            raise DomainError(ILLEGAL_ACTION, "there is no showdown now")
        if hand.to_act != seat:
            raise DomainError(NOT_YOUR_TURN, f"seat {hand.to_act} decides first (R21)")
        return p

    def _finish(self, c: Command, ended_on: EndedOn) -> None:
        hand = self._hand()
        awards = settle(hand, self._game(), self._require_config())
        for award in awards:
            self._emit(award)
        won: dict[int, int] = {}
        for award in awards:
            for share in (award.high, award.low):
                for seat, chips in share.items():
                    won[seat] = won.get(seat, 0) + chips
        stacks = {p.seat: p.stack + won.get(p.seat, 0) for p in hand.players.values()}
        self._emit(HandEnded(
            hand_no=hand.hand_no, ended_on=ended_on, stacks=stacks,
            net={s: stacks[s] - hand.players[s].start_stack for s in stacks},
            rake=sum(a.rake for a in awards),
        ))
        self._emit_departures(c)

    def _emit_departures(self, c: Command) -> None:
        """The hand is over: who left during it is cashed out, then who sat out past the
        limit (R34); a closing table closes."""
        leaving = [seat for seat, state in self.seats.items() if state.leaving]
        for seat in sorted(leaving):       # sorting these alone (usually none) is cheaper than all seats
            state = self.seats[seat]
            self._emit(PlayerLeft(seat=seat, player=state.player, cashed_out=state.stack,
                                  reason=state.leave_reason))
        self._remove_absent(c)
        if self.closing:
            self._close_now()
        else:
            self._serve_waiting_list(c)

    def _game(self) -> Game:
        assert self.game is not None
        return self.game


Said = tuple[str | None, str | None, tuple[str, ...], str, str]


def _announcement(p: HandPlayer) -> Said | None:
    """The announcement of a player's up cards, rendered in both languages.  Memoised by
    what it depends on: the ranks, and whether the cards are all of one suit (draws)."""
    key = p.up_ranks * 2 + (p.up_suits & (p.up_suits - 1) == 0)   # one int: a cheaper key than a pair
    said = _ANNOUNCEMENTS.get(key, _UNKNOWN)
    if said is _UNKNOWN:
        a = announcements.describe(p.ups)
        said = _ANNOUNCEMENTS[key] = None if a is None else (
            a.kind, None if a.rank is None else RANKS[a.rank], tuple(a.draws),
            announcements.render(a, "en"), announcements.render(a, "de"),
        )
    return said  # type: ignore[return-value]


_ANNOUNCEMENTS: Final[dict[int, Said | None]] = {}
_UNKNOWN: Final = object()     # not memoised yet (None is a memoised "nothing to say")


def _seed(text: str) -> bytes:
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise DomainError(BAD_SEED, "the seed must be hex") from None
    if not seed:
        raise DomainError(BAD_SEED, "the seed is empty")
    return seed


def _entropy(text: str | None) -> str | None:
    """A player's entropy for the deck (R32.4): hex, 1..MAX_ENTROPY_BYTES bytes."""
    if text is None:
        return None
    try:
        value = bytes.fromhex(text)
    except ValueError:
        value = b""
    if not 0 < len(value) <= MAX_ENTROPY_BYTES:
        raise DomainError(BAD_ENTROPY, f"entropy is 1..{MAX_ENTROPY_BYTES} bytes in hex, not {quoted(text)}")
    return value.hex()


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Record):
        return {k: _plain(getattr(value, k)) for k in value.FIELDS if not k.startswith("_")}
    return value


def _shows_pair(p: HandPlayer) -> bool:
    """R12: a pair among the up cards."""
    ranks = [c >> 2 for c in p.ups]
    return len(set(ranks)) < len(ranks)


# --- applying events: the only code that changes a table ------------------------------


def _opened(t: Table, e: TableOpened) -> None:
    t.table_id, t.config, t.game = e.table_id, e.config, GAMES[e.config.game]


def _sat_down(t: Table, e: PlayerSatDown) -> None:
    t.seats[e.seat] = SeatState(e.player, e.auto_ante)


def _bought(t: Table, e: ChipsBought) -> None:
    t.seats[e.seat].stack += e.amount


def _sit_out_changed(t: Table, e: SitOutChanged) -> None:
    seat = t.seats[e.seat]
    seat.sitting_out, seat.out_since_ms, seat.out_reason = e.sitting_out, e.since_ms, e.reason


def _left(t: Table, e: PlayerLeft) -> None:
    del t.seats[e.seat]


def _leave_requested(t: Table, e: LeaveRequested) -> None:
    t.seats[e.seat].leaving, t.seats[e.seat].leave_reason = True, e.reason
    hand = t.hand
    p = hand.players.get(e.seat) if hand else None
    if hand is None or p is None:
        return
    hand.turn_options = None       # one player fewer may lift the cap (R14): recompute
    if hand.phase == "ante" or (hand.phase in ("deal", "betting") and p.can_act):
        p.folded = True
        hand.changed()
        if hand.to_act == e.seat:
            hand.to_act = hand.turn_kind = None


def _hand_started(t: Table, e: HandStarted) -> None:
    players = [HandPlayer(s.seat, s.player, s.stack) for s in e.seats]
    seed = bytes.fromhex(e.seed) if e.seed is not None else None
    committed = None
    if e.deck:
        committed = CommittedDeck(seed if seed is not None else scripted_key(e.deck), parse_many(e.deck))
    elif seed is not None:
        committed = CommittedDeck(seed)
    hand = HandState(e.hand_no, e.button, players, committed)
    t.hand, t.button = hand, e.button
    t.pause_turn, t.pause_served = None, False


def _ante_posted(t: Table, e: AntePosted) -> None:
    hand = t.hand
    assert hand is not None
    p = hand.players[e.seat]
    p.put_in(e.amount)
    p.ante, p.posted, p.round_bet = e.amount, True, 0
    if e.entropy is not None:
        hand.committed.mix(bytes.fromhex(e.entropy))
    hand.changed()


def _ante_skipped(t: Table, e: AnteSkipped) -> None:
    hand = t.hand
    assert hand is not None
    hand.players[e.seat].folded = True
    hand.changed()


def _hand_cancelled(t: Table, e: HandCancelled) -> None:
    t.hand, t.last_turn = None, None
    _next_config_in_force(t)


def _antes_collected(t: Table, e: AntesCollected) -> None:
    hand = t.hand
    assert hand is not None
    hand.committed.fix(e.deck_format, e.deck_size)   # R32: a hand committed in format 1 stays in it
    for s in e.seats:
        hand.players[s].dealt_in = True
    dealt_in = set(e.seats)
    hand.set_order([s for s in hand.order if s in dealt_in])
    hand.changed()
    hand.phase, hand.to_act, hand.turn_kind = "deal", None, None


def _cards_dealt(t: Table, e: CardsDealt) -> None:
    hand = t.hand
    assert hand is not None
    street, dealt, burned, community = e.street, e.cards, e.burned, e.community
    if e.reshuffled:                       # R17: burns (and stub) shuffled together
        hand.consumed -= len(hand.burns)
        hand.deck, hand.pos, hand.burns = ListedDeck(parse_many(e.stub)), 0, []
    taken = len(burned) + len(dealt) + (community is not None)
    hand.burns += parse_many(burned)
    players = hand.players
    for d in dealt:
        card, up = parse(d.card), d.up
        p = players[d.seat]
        p.cards.append(card)
        p.up.append(up)
        p.streets.append(street)
        if up:
            p.add_up_card(card)
    if community is not None:
        hand.community.append(parse(community))
        hand.community_streets.append(street)
    hand.pos += taken
    hand.consumed += taken
    hand.street = street
    hand.first_round_over = hand.first_round_over or street > 0
    hand.current_bet = hand.raise_count = hand.reopen = 0
    hand.big_made = hand.open_pair = hand.bring_in_pending = hand.round_acted = False
    hand.round_first = hand.round_aggressor = hand.to_act = hand.turn_kind = None
    hand.phase = "deal"
    for p in hand.players.values():
        p.round_bet, p.acted_at = 0, None


def _last_cards_exposed(t: Table, e: LastCardsExposed) -> None:
    hand = t.hand
    assert hand is not None
    for d in e.turned:
        p = hand.players[d.seat]
        if not p.up[-1]:
            p.up[-1] = True
            p.add_up_card(p.cards[-1])
    hand.skip_last_round = e.skip_betting


def _round_started(t: Table, e: RoundStarted) -> None:
    hand = t.hand
    assert hand is not None
    hand.phase, hand.round_first, hand.open_pair = "betting", e.first, e.open_pair
    hand.bring_in_pending = e.bring_in


def _turn_started(t: Table, e: TurnStarted) -> None:
    t.turn, t.last_turn = e.turn, e
    hand = t.hand
    assert hand is not None
    hand.to_act, hand.turn_kind, hand.turn_options = e.seat, e.kind, e.options


def _acted(t: Table, e: Acted) -> None:
    hand = t.hand
    assert hand is not None and t.config is not None
    action, seat, amount = e.action, e.seat, e.amount
    p = hand.players[seat]
    if action == "fold":
        p.folded = True
    elif amount:
        p.put_in(amount)
    if action == "fold" or e.all_in:
        hand.changed()
    hand.bring_in_pending = False
    if action == "bring_in":
        hand.current_bet = max(hand.current_bet, t.config.stakes.bring_in_amount)  # R16
        hand.round_aggressor = seat
    elif action in ("complete", "bet", "raise"):
        to = e.to
        if e.full:
            hand.raise_count += 1
            hand.reopen += 1
            if to - hand.current_bet >= t.config.stakes.big_bet:
                hand.big_made = True                                              # R12
        hand.current_bet = max(hand.current_bet, to)
        hand.round_aggressor = seat
    p.acted_at = hand.reopen
    hand.round_acted = True
    hand.to_act = hand.turn_kind = None


def _timed_out(t: Table, e: TimedOut) -> None:
    hand = t.hand
    assert hand is not None
    if e.outcome == "protected":           # R19: all-in for what he has put in
        p = hand.players[e.seat]
        p.all_in = p.protected = True
        p.acted_at = hand.reopen
        hand.to_act = hand.turn_kind = None
        hand.changed()


def _round_ended(t: Table, e: RoundEnded) -> None:
    hand = t.hand
    assert hand is not None
    if e.returned_seat is not None:
        p = hand.players[e.returned_seat]
        p.stack += e.returned
        p.contributed -= e.returned
        p.round_bet -= e.returned
        p.all_in = p.protected or p.stack == 0
        hand.changed()
    if hand.round_acted:                   # R21: remember who would show first
        hand.showdown_lead = hand.round_aggressor if hand.round_aggressor is not None else hand.round_first
    hand.phase, hand.to_act, hand.turn_kind = "deal", None, None


def _showdown_started(t: Table, e: ShowdownStarted) -> None:
    hand = t.hand
    assert hand is not None
    hand.phase, hand.showdown_order, hand.to_act, hand.turn_kind = "showdown", list(e.order), None, None


def _shown(t: Table, e: HandShown) -> None:
    hand = t.hand
    assert hand is not None
    hand.players[e.seat].showed = True
    hand.to_act = hand.turn_kind = None


def _mucked(t: Table, e: HandMucked) -> None:
    hand = t.hand
    assert hand is not None
    hand.players[e.seat].mucked = True
    hand.to_act = hand.turn_kind = None


def _nothing(t: Table, e: Event) -> None:
    """Events that record a fact without changing what the rules look at."""


def _hand_ended(t: Table, e: HandEnded) -> None:
    for seat, stack in e.stacks.items():
        if seat in t.seats:
            t.seats[seat].stack = stack
    t.hand_no, t.hand, t.last_turn = e.hand_no, None, None
    _next_config_in_force(t)


def _next_config_in_force(t: Table) -> None:
    """The floor's settings given during the hand hold from now on (TableConfigured)."""
    if t.next_config is not None:
        t.config, t.next_config = t.next_config, None


def _pause_started(t: Table, e: PauseStarted) -> None:
    t.turn = t.pause_turn = e.turn
    t.pause_waiting = e.purpose != "next_hand"


def _pause_ended(t: Table, e: PauseEnded) -> None:
    t.pause_turn, t.pause_served, t.pause_waiting = None, True, False


def _configured(t: Table, e: TableConfigured) -> None:
    if t.hand is None:
        t.config = e.config
    else:
        t.next_config = e.config


def _paused(t: Table, e: TablePaused) -> None:
    t.paused = True


def _resumed(t: Table, e: TableResumed) -> None:
    t.paused = False


def _closing(t: Table, e: TableClosing) -> None:
    t.closing = True


def _closed(t: Table, e: TableClosed) -> None:
    t.closed, t.closing, t.pause_turn, t.pause_waiting = True, False, None, False


def _waiting_joined(t: Table, e: WaitingListJoined) -> None:
    t.waiting.append(e.player)


def _waiting_left(t: Table, e: WaitingListLeft) -> None:
    t.waiting.remove(e.player)
    if t.offer is not None and t.offer.player == e.player:
        t.offer = None


def _seat_offered(t: Table, e: SeatOffered) -> None:
    t.offer = msgspec.structs.replace(e, command_id=None)   # the offer, whichever command made it


# the busiest events, applied and made (Final: compiled, a C static, where a class imported
# from the interpreted events module is looked up in the module's dict at every use)
_TURN_STARTED: Final = TurnStarted
_ACTED: Final = Acted
_CARDS_DEALT: Final = CardsDealt
_ROUND_STARTED: Final = RoundStarted
_ROUND_ENDED: Final = RoundEnded
_ANTE_POSTED: Final = AntePosted
_POT_AWARDED: Final = PotAwarded
_ANNOUNCED: Final = Announced
_ACT: Final = Act          # and the busiest command (execute)

# the attributes that make up a table's state (``state()``, snapshots)
_STATE: Final = (
    "table_id", "config", "game", "seats", "button", "hand_no", "turn", "hand", "version", "last_command_ids",
    "last_turn", "pause_turn", "pause_served", "pause_waiting", "next_config", "paused", "closing", "closed",
    "waiting", "offer",
)

_APPLY: Final[dict[type[Event], Callable[[Table, Any], None]]] = {
    TableOpened: _opened, PlayerSatDown: _sat_down, ChipsBought: _bought,
    SitOutChanged: _sit_out_changed, PlayerLeft: _left, LeaveRequested: _leave_requested,
    HandStarted: _hand_started, AntePosted: _ante_posted, AnteSkipped: _ante_skipped,
    HandCancelled: _hand_cancelled, AntesCollected: _antes_collected, CardsDealt: _cards_dealt,
    LastCardsExposed: _last_cards_exposed, RoundStarted: _round_started, TurnStarted: _turn_started,
    Acted: _acted, TimedOut: _timed_out, Announced: _nothing, RoundEnded: _round_ended,
    ShowdownStarted: _showdown_started, HandShown: _shown, HandMucked: _mucked,
    PotAwarded: _nothing, HandEnded: _hand_ended, PauseStarted: _pause_started, PauseEnded: _pause_ended,
    TableConfigured: _configured, TablePaused: _paused, TableResumed: _resumed, TableClosing: _closing,
    TableClosed: _closed, WaitingListJoined: _waiting_joined, WaitingListLeft: _waiting_left,
    SeatOffered: _seat_offered,
}

_HANDLERS: Final[dict[type[Command], Callable[[Table, Any], None]]] = {
    OpenTable: Table._open, SitDown: Table._sit_down, BuyIn: Table._buy_in, SitOut: Table._sit_out,
    Leave: Table._leave, StartHand: Table._start_hand, ScheduleHand: Table._schedule_hand,
    PostAnte: Table._post_ante,
    SkipAnte: Table._skip_ante, DealStreet: Table._deal_street_command, Act: Table._act,
    Timeout: Table._timeout, Show: Table._show, Muck: Table._muck,
    ConfigureTable: Table._configure, PauseTable: Table._pause_table, ResumeTable: Table._resume_table,
    CloseTable: Table._close_table, SitOutPlayer: Table._sit_out_player, RemovePlayer: Table._remove_player,
    JoinWaitingList: Table._join_waiting_list, LeaveWaitingList: Table._leave_waiting_list,
}

# what a closing table refuses (table_closed): its last hand and leaving go on
_REFUSED_WHILE_CLOSING: Final = (
    SitDown, BuyIn, ConfigureTable, PauseTable, ResumeTable, ScheduleHand, StartHand, JoinWaitingList,
)
