"""Replay protection without a window: each sender numbers his commands.

A command from a sender (``Table.execute(command, by=sender)``) carries ``command_id``,
a decimal positive integer below 2**63, as a string, strictly greater than the id of
that sender's last command carried out at this table.  Clients take microseconds since
the epoch, bumped to previous + 1, so a restarted client continues above its old ids.
A lower or equal id is refused as ``duplicate_command`` for the life of the table: a
client's retry after a lost reply is answered "duplicate", which clients take as done.
A refused command changes nothing, so it uses up no id.

An id is also at most the service's clock in microseconds plus ``AHEAD_US`` (the
command's ``now_ms``, stamped by the service), else ``bad_command_id``: an id far in
the future would lock its sender out until the clock reaches it (2**63-1: for ever,
he could not even leave).  The margin is for a client whose clock runs ahead of the
service's (five minutes: far beyond a synchronised clock, and the longest a sender
can lock himself out).  A command without a clock (``now_ms`` 0: scripted hands, the
re-run of a record that shows none) is bounded by 2**63 only.

The id stored on the command's first event is ``"<role>.<name>#<n>"``; folding the
events in keeps each sender's highest ``n`` (replay rebuilds it).  Memory: one entry
per identity that ever had a command carried out at the table, however many commands
it sent.  Commands without a sender (the room's own code) carry no id.

A sender acting for a player (the cashier's ``BuyIn``, which names the player who
paid) numbers those commands per player: its sequence is ``"<role>.<name>/<player>"``
(the stored id is the same ``"<role>.<name>#<n>"``; replay knows the player from the
seat).  So the cashier may have one buy-in of each player in flight at a table, and a
resent one refused as a duplicate was carried out (docs/design/cashier.md).  A
sequence kept before (one for the sender, from a snapshot written before) still
counts: an id must be above both.
"""

from __future__ import annotations

import re
from typing import Final

from .authority import Sender
from .errors import BAD_COMMAND_ID, DUPLICATE_COMMAND, DomainError, quoted

_DECIMAL: Final = re.compile(r"[1-9][0-9]{0,18}")
LIMIT: Final = 2**63            # ids are below this (a signed 64-bit integer in any client)
AHEAD_US: Final = 300_000_000   # how far (µs) an id may be ahead of the service's clock


def highest(now_ms: int) -> int:
    """The highest id a command stamped ``now_ms`` may carry (no clock: below LIMIT)."""
    return min(now_ms * 1000 + AHEAD_US, LIMIT - 1) if now_ms > 0 else LIMIT - 1


def sequence(key: str, player: str | None) -> str:
    """The sequence a sender's command is numbered in: his own, or his for ``player``."""
    return key if player is None else f"{key}/{player}"


def next_id(last: dict[str, int], sender: Sender, command_id: str | None, now_ms: int,
            player: str | None = None) -> str:
    """The id to store for ``sender``'s command stamped ``now_ms`` (given for
    ``player``: numbered per player), or ``bad_command_id`` / ``duplicate_command``."""
    if command_id is None or not _DECIMAL.fullmatch(command_id) or int(command_id) >= LIMIT:
        raise DomainError(BAD_COMMAND_ID, f"command_id must be a decimal integer in 1..2**63-1, not {quoted(command_id)}")
    n = int(command_id)
    if n > highest(now_ms):
        raise DomainError(BAD_COMMAND_ID, f"command_id {n} is ahead of the clock ({now_ms} ms) by more than "
                                          f"{AHEAD_US // 1_000_000} s: ids are microseconds since the epoch")
    key = sender.key
    previous = max(last.get(sequence(key, player), 0), last.get(key, 0))
    if n <= previous:
        raise DomainError(DUPLICATE_COMMAND, f"command {n} of {sequence(key, player)} is not above its last, "
                                             f"{previous}: already seen")
    return f"{key}#{n}"


def none_without_sender(command_id: str | None) -> None:
    """A command without a sender carries no id: ids number a sender's commands."""
    if command_id is not None:
        raise DomainError(BAD_COMMAND_ID, f"a command without a sender carries no command_id, not {quoted(command_id)}")


def remember(last: dict[str, int], stored: str, player: str | None = None) -> None:
    """Fold a stored id in: its sequence's highest id so far (``player``: the one it
    was given for).  Ids stored before senders numbered their commands (no ``#<n>``)
    name no sender and are passed over."""
    key, _, number = stored.rpartition("#")
    if key and _DECIMAL.fullmatch(number):
        n = int(number)
        key = sequence(key, player)
        if n > last.get(key, 0):
            last[key] = n
