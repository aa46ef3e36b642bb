"""A player's account at the cashier: an event-sourced aggregate (docs/design/cashier.md).

Chips are whole numbers and the balance is never below zero.

- An **operator** deposits and withdraws; each movement has a reference (a name, unique
  in the account): a retried deposit is refused ``duplicate_reference``, never booked
  twice.
- A **buy-in** (or top-up) is a saga run by the cashier service: :meth:`Account.reserve`
  takes the chips off the balance for a seat at a table, then :meth:`Account.confirm`
  (the table credited the seat: the chips stay at the table) or :meth:`Account.refund`
  (the table refused: they come back).  The player numbers his buy-in requests like his
  table commands (``command_ids``): a replayed request is refused ``duplicate_command``.
  One buy-in of his is in flight at a table at a time (``buy_in_in_flight``), and the
  table command ids the cashier gives his buy-ins there rise (:meth:`Account.next_buy_in_id`):
  the table numbers the cashier's buy-ins per player, so a resent one that the table
  calls a duplicate was carried out.  The cashier instance that sends it is its
  ``owner``; another one takes it over with a claim (:meth:`Account.claim`).
- A **cash-out** (:meth:`Account.cash_out`) credits the chips a seat held when its
  player left a table, once per ``PlayerLeft``: the account remembers the table
  versions it was credited for.

Each method checks everything first and raises a DomainError that changes nothing, or
applies its event and returns it.  The clock (``at_ms``) is handed in by the cashier.
The account of player P is the stream ``account.P`` of the cashier's store.
"""

from __future__ import annotations

from typing import Final, Literal, TypeVar, Union

import msgspec

from . import command_ids
from .authority import Sender
from .errors import (
    BAD_AMOUNT,
    BUY_IN_IN_FLIGHT,
    DUPLICATE_REFERENCE,
    FORBIDDEN,
    INSUFFICIENT_FUNDS,
    UNKNOWN_BUY_IN,
    UNKNOWN_SEAT,
    DomainError,
    quoted,
)
from .limits import MAX_TABLE_CHIPS, SEATS
from .names import check_name

MAX_MOVEMENT: Final = MAX_TABLE_CHIPS     # any one deposit, withdrawal or buy-in
MAX_BALANCE: Final = 10**15               # a deposit never takes a balance above this (< 2**53)
STREAM_PREFIX: Final = "account."

Operation = Literal["view", "buy_in", "deposit", "withdraw"]
PLAYER_OPERATIONS: Final = ("view", "buy_in")          # his own account only
OPERATOR_OPERATIONS: Final = ("view", "deposit", "withdraw")


# --- events ----------------------------------------------------------------------------


class AccountEvent(msgspec.Struct, frozen=True, tag_field="type", kw_only=True):
    v: int = 1
    at_ms: int = 0                # when the cashier booked it (ms since the epoch)


class Deposited(AccountEvent, tag=True):
    amount: int
    reference: str
    operator: str


class Withdrawn(AccountEvent, tag=True):
    amount: int
    reference: str
    operator: str


class BuyInReserved(AccountEvent, tag=True):
    """Chips taken off the balance for a seat: the table gets ``BuyIn`` with
    ``command_id`` from the service "cashier"."""

    table_id: str
    seat: int
    amount: int
    command_id: str               # the table command's id (the cashier's sequence for this player there)
    request_id: str               # the player's request, stored as "<role>.<name>#<n>"
    owner: str | None = None      # the cashier instance that sends it (None: reserved before owners were kept)


class BuyInClaimed(AccountEvent, tag=True):
    """``owner`` sends the open buy-in (again): its own after a restart, or another
    instance's it took over."""

    table_id: str
    command_id: str
    owner: str


class BuyInConfirmed(AccountEvent, tag=True):
    """The table credited the seat (its ``ChipsBought`` carries ``service.cashier#<command_id>``)."""

    table_id: str
    seat: int
    amount: int
    command_id: str


class BuyInRefunded(AccountEvent, tag=True):
    """The table refused the buy-in (``reason``: its error code): the chips are back."""

    table_id: str
    seat: int
    amount: int
    command_id: str
    reason: str


class CashedOut(AccountEvent, tag=True):
    """The chips of a seat whose player left the table (its ``PlayerLeft`` at ``version``)."""

    table_id: str
    version: int
    seat: int
    amount: int


AccountEventType = Union[Deposited, Withdrawn, BuyInReserved, BuyInClaimed, BuyInConfirmed, BuyInRefunded, CashedOut]
E = TypeVar("E", bound=AccountEvent)


def balance_change(event: AccountEvent) -> int:
    """What an event does to the balance (a statement's column, and :meth:`Account.apply`)."""
    if isinstance(event, Deposited | BuyInRefunded | CashedOut):
        return event.amount
    if isinstance(event, Withdrawn | BuyInReserved):
        return -event.amount
    return 0


# --- who may do what -----------------------------------------------------------------------


def authorize(sender: Sender, player: str, operation: Operation) -> None:
    """Raise ``forbidden`` unless ``sender`` may do ``operation`` on ``player``'s account:
    a player looks at and buys in from his own account only; an operator looks at,
    deposits to and withdraws from any account."""
    if sender.role == "player":
        if operation not in PLAYER_OPERATIONS:
            raise DomainError(FORBIDDEN, f"a player may not {operation}")
        if player != sender.name:
            raise DomainError(FORBIDDEN, f"player {quoted(sender.name)} may not {operation} "
                                         f"on the account of {quoted(player)}")
        return
    if sender.role == "operator" and operation in OPERATOR_OPERATIONS:
        return
    raise DomainError(FORBIDDEN, f"a {sender.role} may not {operation} on an account")


def stream_id(player: str) -> str:
    return STREAM_PREFIX + player


def player_of(stream: str) -> str | None:
    """The player whose account ``stream`` is, or None for another stream."""
    return stream[len(STREAM_PREFIX):] if stream.startswith(STREAM_PREFIX) else None


# --- the aggregate -------------------------------------------------------------------------


class Reservation(msgspec.Struct, frozen=True):
    table_id: str
    seat: int
    amount: int
    command_id: str
    owner: str | None = None      # the instance that sends it (None: anyone, after the take-over time)
    claimed_ms: int = 0           # when its owner last claimed it (reserving is a claim)

    def claimable(self, owner: str, now_ms: int, takeover_ms: int) -> bool:
        """May ``owner`` send it now: its own at once, another's once unclaimed for ``takeover_ms``."""
        return self.owner == owner or now_ms - self.claimed_ms >= takeover_ms

    def fresh(self, owner: str, now_ms: int, fresh_ms: int) -> bool:
        """Is ``owner``'s claim recent enough to send it?"""
        return self.owner == owner and now_ms - self.claimed_ms < fresh_ms


BuyInStep = BuyInReserved | BuyInClaimed | BuyInConfirmed | BuyInRefunded


def in_flight_after(reservation: Reservation | None, event: BuyInStep) -> Reservation | None:
    """A buy-in's reservation after one of its own events (``reservation`` before; None:
    not in flight): reserved, claimed by an owner, or settled.  The account keeps its
    buy-ins so, and the cashier's recovery every player's (services/cashier/recovery.py)."""
    if isinstance(event, BuyInReserved):
        return Reservation(event.table_id, event.seat, event.amount, event.command_id, event.owner, event.at_ms)
    if isinstance(event, BuyInClaimed):
        return None if reservation is None else msgspec.structs.replace(
            reservation, owner=event.owner, claimed_ms=event.at_ms)
    return None                            # confirmed or refunded


def buy_in_key(table_id: str, command_id: str) -> str:
    """A buy-in's name in its account: the table and the table command's id."""
    return f"{table_id}#{command_id}"


def _check_amount(amount: object, what: str) -> int:
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 < amount <= MAX_MOVEMENT:
        raise DomainError(BAD_AMOUNT, f"{what} is a whole number of chips in 1..{MAX_MOVEMENT}, not {quoted(amount)}")
    return amount


class Account:
    """One player's account, rebuilt from its events (:meth:`replay`)."""

    def __init__(self, player: str) -> None:
        self.player = player
        self.balance = 0
        self.version = 0                                   # events applied
        self.pending: dict[str, Reservation] = {}          # buy_in_key -> reserved, not settled
        self.references: dict[str, tuple[int, Deposited | Withdrawn]] = {}   # of deposits and withdrawals: version, event
        self.cashed_out: dict[str, set[int]] = {}          # table -> versions of PlayerLeft credited
        self.last_requests: dict[str, int] = {}            # the player's highest buy-in request id
        self.last_buy_in_ids: dict[str, int] = {}          # table -> the highest table command id given there

    @classmethod
    def replay(cls, player: str, events: list[AccountEventType]) -> Account:
        account = cls(player)
        for event in events:
            account.apply(event)
        return account

    @property
    def reserved(self) -> int:
        """Chips on their way to a table (reserved, not yet confirmed or refunded)."""
        return sum(r.amount for r in self.pending.values())

    # --- operators

    def deposit(self, amount: int, reference: str, operator: str, at_ms: int) -> Deposited:
        _check_amount(amount, "a deposit")
        self._check_reference(reference)
        if self.balance + amount > MAX_BALANCE:
            raise DomainError(BAD_AMOUNT, f"a deposit may not take a balance above {MAX_BALANCE}")
        return self._emit(Deposited(amount=amount, reference=reference, operator=operator, at_ms=at_ms))

    def repeat_of(self, kind: type[Deposited | Withdrawn], amount: int,
                  reference: str) -> tuple[int, Deposited | Withdrawn] | None:
        """The movement (its version and event) that this one repeats exactly: the same
        kind, amount and reference, done before.  A desk that retries a deposit it is not
        sure of gets "done before" and the original, not an error; the same reference
        with another amount or kind is still refused (``duplicate_reference``)."""
        done = self.references.get(reference)
        if done is None or type(done[1]) is not kind or done[1].amount != amount:
            return None
        return done

    def withdraw(self, amount: int, reference: str, operator: str, at_ms: int) -> Withdrawn:
        _check_amount(amount, "a withdrawal")
        self._check_reference(reference)
        self._check_funds(amount)
        return self._emit(Withdrawn(amount=amount, reference=reference, operator=operator, at_ms=at_ms))

    # --- the buy-in saga

    def open_at(self, table_id: str) -> Reservation | None:
        """The buy-in of this player in flight at ``table_id``, if any."""
        return next((r for r in self.pending.values() if r.table_id == table_id), None)

    def next_buy_in_id(self, table_id: str, now_us: int) -> str:
        """The table command id of the next buy-in at ``table_id``: microseconds since the
        epoch, above the last one given there (also when the clock went back)."""
        return str(max(now_us, self.last_buy_in_ids.get(table_id, 0) + 1))

    def reserve(self, table_id: str, seat: int, amount: int, command_id: str, request_id: str | None,
                at_ms: int, owner: str | None = None) -> BuyInReserved:
        """Take ``amount`` off the balance for ``seat`` at ``table_id``; ``request_id``
        is the player's number for this request (above his last); ``owner`` sends it."""
        check_name(table_id, "table id")
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < SEATS[1]:
            raise DomainError(UNKNOWN_SEAT, f"seats are 0..{SEATS[1] - 1}, not {quoted(seat)}")
        _check_amount(amount, "a buy-in")
        stored_request = command_ids.next_id(self.last_requests, Sender("player", self.player), request_id, at_ms)
        in_flight = self.open_at(table_id)
        if in_flight is not None:
            raise DomainError(BUY_IN_IN_FLIGHT, f"buy-in {in_flight.command_id} at {table_id} is not settled yet")
        self._check_funds(amount)
        return self._emit(BuyInReserved(table_id=table_id, seat=seat, amount=amount, command_id=command_id,
                                        request_id=stored_request, owner=owner, at_ms=at_ms))

    def claim(self, table_id: str, owner: str, at_ms: int, takeover_ms: int) -> BuyInClaimed:
        """``owner`` sends the buy-in in flight at ``table_id`` (again), if it may."""
        r = self.open_at(table_id)
        if r is None:
            raise DomainError(UNKNOWN_BUY_IN, f"no buy-in is in flight at {table_id}")
        if not r.claimable(owner, at_ms, takeover_ms):
            raise DomainError(BUY_IN_IN_FLIGHT, f"buy-in {r.command_id} at {table_id} is {r.owner}'s to send")
        return self._emit(BuyInClaimed(table_id=table_id, command_id=r.command_id, owner=owner, at_ms=at_ms))

    def confirm(self, table_id: str, command_id: str, at_ms: int) -> BuyInConfirmed:
        r = self._reservation(table_id, command_id)
        return self._emit(BuyInConfirmed(table_id=table_id, seat=r.seat, amount=r.amount,
                                         command_id=command_id, at_ms=at_ms))

    def refund(self, table_id: str, command_id: str, reason: str, at_ms: int) -> BuyInRefunded:
        r = self._reservation(table_id, command_id)
        return self._emit(BuyInRefunded(table_id=table_id, seat=r.seat, amount=r.amount,
                                        command_id=command_id, reason=reason, at_ms=at_ms))

    # --- leaving a table

    def cash_out(self, table_id: str, version: int, seat: int, amount: int, at_ms: int) -> CashedOut | None:
        """Credit a seat's chips for the ``PlayerLeft`` at ``version`` of ``table_id``;
        None when that one was credited before (or left nothing)."""
        if amount <= 0 or version in self.cashed_out.get(table_id, ()):
            return None
        return self._emit(CashedOut(table_id=table_id, version=version, seat=seat, amount=amount, at_ms=at_ms))

    # --- event sourcing

    def apply(self, event: AccountEvent) -> None:
        self.balance += balance_change(event)
        if isinstance(event, Deposited | Withdrawn):
            self.references[event.reference] = (self.version + 1, event)
        elif isinstance(event, BuyInReserved | BuyInClaimed):
            key = buy_in_key(event.table_id, event.command_id)
            reservation = in_flight_after(self.pending.get(key), event)
            if reservation is not None:
                self.pending[key] = reservation
            if isinstance(event, BuyInReserved):
                command_ids.remember(self.last_requests, event.request_id)
                given = int(event.command_id) if event.command_id.isdecimal() else 0
                self.last_buy_in_ids[event.table_id] = max(self.last_buy_in_ids.get(event.table_id, 0), given)
        elif isinstance(event, BuyInConfirmed | BuyInRefunded):
            del self.pending[buy_in_key(event.table_id, event.command_id)]
        elif isinstance(event, CashedOut):
            self.cashed_out.setdefault(event.table_id, set()).add(event.version)
        self.version += 1

    def _emit(self, event: E) -> E:
        self.apply(event)
        return event

    # --- checks

    def _check_reference(self, reference: str) -> None:
        check_name(reference, "reference")
        if reference in self.references:
            raise DomainError(DUPLICATE_REFERENCE, f"reference {quoted(reference)} was used before in this account")

    def _check_funds(self, amount: int) -> None:
        if amount > self.balance:
            raise DomainError(INSUFFICIENT_FUNDS, f"{amount} chips asked, the balance is {self.balance}")

    def _reservation(self, table_id: str, command_id: str) -> Reservation:
        r = self.pending.get(buy_in_key(table_id, command_id))
        if r is None:
            raise DomainError(UNKNOWN_BUY_IN, f"no buy-in {command_id} at {table_id} is reserved")
        return r
