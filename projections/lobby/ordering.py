"""Exactly once and in order: what to do with a table's event, given the version its
lobby entry is at.

The entry holds the version of the table's last event applied.  An event at or below
it was applied before (a redelivery, or a copy the relay published twice): it changes
nothing.  The next version is applied.  A higher one leaves a gap: either its
predecessor is still on its way (another instance holds it, or it waits for a
redelivery), and the event must wait; or the predecessor never reached the stream (a
dead letter, a retention limit), which the stream itself tells (the service asks it,
docs/design/lobby.md).
"""

from __future__ import annotations

from enum import Enum
from typing import Final

EVERY: Final = 0.25     # seconds: a table's entry is written at most once in this (lanes.py; the lag
                        # goal is 1 s: docs/design/lobby.md, "Cost")


class Place(Enum):
    SEEN = "seen"          # applied before: acknowledge, change nothing
    NEXT = "next"          # apply it
    GAP = "gap"            # versions between are missing: wait, or find them lost


def place(applied: int, version: int) -> Place:
    """Where an event of ``version`` stands for an entry that applied ``applied``
    (0: no entry yet)."""
    if version <= applied:
        return Place.SEEN
    if version == applied + 1:
        return Place.NEXT
    return Place.GAP
