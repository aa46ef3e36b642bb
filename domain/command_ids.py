"""Replay protection without a window: each sender numbers his commands.

A command from a sender (``Table.execute(command, by=sender)``) carries ``command_id``,
a decimal positive integer below 2**63, as a string, strictly greater than the id of
that sender's last command carried out at this table.  Clients take microseconds since
the epoch, bumped to previous + 1, so a restarted client continues above its old ids.
A lower or equal id is refused as ``duplicate_command`` for the life of the table: a
client's retry after a lost reply is answered "duplicate", which clients take as done.
A refused command changes nothing, so it uses up no id.

The id stored on the command's first event is ``"<role>.<name>#<n>"``; folding the
events in keeps each sender's highest ``n`` (replay rebuilds it).  Memory: one entry
per identity that ever had a command carried out at the table, however many commands
it sent.  Commands without a sender (the room's own code) carry no id.
"""

from __future__ import annotations

import re
from typing import Final

from .authority import Sender
from .errors import BAD_COMMAND_ID, DUPLICATE_COMMAND, DomainError, quoted

_DECIMAL: Final = re.compile(r"[1-9][0-9]{0,18}")
LIMIT: Final = 2**63            # ids are below this (a signed 64-bit integer in any client)


def next_id(last: dict[str, int], sender: Sender, command_id: str | None) -> str:
    """The id to store for ``sender``'s command, or ``bad_command_id`` / ``duplicate_command``."""
    if command_id is None or not _DECIMAL.fullmatch(command_id) or int(command_id) >= LIMIT:
        raise DomainError(BAD_COMMAND_ID, f"command_id must be a decimal integer in 1..2**63-1, not {quoted(command_id)}")
    n = int(command_id)
    key = sender.key
    previous = last.get(key, 0)
    if n <= previous:
        raise DomainError(DUPLICATE_COMMAND, f"command {n} of {key} is not above its last, {previous}: already seen")
    return f"{key}#{n}"


def none_without_sender(command_id: str | None) -> None:
    """A command without a sender carries no id: ids number a sender's commands."""
    if command_id is not None:
        raise DomainError(BAD_COMMAND_ID, f"a command without a sender carries no command_id, not {quoted(command_id)}")


def remember(last: dict[str, int], stored: str) -> None:
    """Fold a stored id in: its sender's highest id so far.  Ids stored before senders
    numbered their commands (no ``#<n>``) name no sender and are passed over."""
    key, _, number = stored.rpartition("#")
    if key and _DECIMAL.fullmatch(number):
        n = int(number)
        if n > last.get(key, 0):
            last[key] = n
