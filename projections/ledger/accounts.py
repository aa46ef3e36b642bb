"""The ledger's accounts: where a chip can be.

An account is a text name, ``<class>:<what>`` (names and table ids never hold ``:``,
``#`` or ``/``, domain/names.py).  Every entry moves chips from its credit account to
its debit account, so an account's balance is its debits minus its credits, and the
balances of all accounts always sum to zero: the outside world's balance is minus the
chips that came into the room.

==========  =========================  ============================================
class       name                       holds
==========  =========================  ============================================
world       ``world``                  the outside world (deposits, withdrawals,
                                       an operator's direct credits)
player      ``player:<P>``             P's balance at the cashier
transit     ``transit:<P>``            P's chips between the cashier and a table
                                       (reserved for a buy-in, or cashed out and
                                       not yet credited)
seat        ``seat:<T>:<S>:<P>``       P's stack on seat S of table T
hand        ``hand:<T>#<H>``           chips put into hand H of table T, not yet in
                                       a pot (or returned)
pot         ``pot:<T>#<H>/<i>``        pot i (0 = main) of that hand, until awarded
rake        ``rake:<T>``               the house's rake taken at table T
==========  =========================  ============================================
"""

from __future__ import annotations

from typing import Final

WORLD: Final = "world"
PLAYER: Final = "player"
TRANSIT: Final = "transit"
SEAT: Final = "seat"
HAND: Final = "hand"
POT: Final = "pot"
RAKE: Final = "rake"

CLASSES: Final = (WORLD, PLAYER, TRANSIT, SEAT, HAND, POT, RAKE)
ON_TABLES: Final = (SEAT, HAND, POT)   # the chips on the tables


def world() -> str:
    return WORLD


def player(name: str) -> str:
    return f"{PLAYER}:{name}"


def transit(name: str) -> str:
    return f"{TRANSIT}:{name}"


def seat(table: str, seat_no: int, name: str) -> str:
    return f"{SEAT}:{table}:{seat_no}:{name}"


def hand(table: str, hand_no: int) -> str:
    return f"{HAND}:{table}#{hand_no}"


def pot(table: str, hand_no: int, index: int) -> str:
    return f"{POT}:{table}#{hand_no}/{index}"


def rake(table: str) -> str:
    return f"{RAKE}:{table}"


def class_of(account: str) -> str:
    """The class of an account name (``seat`` for ``seat:t1:3:alice``)."""
    return account.partition(":")[0]
