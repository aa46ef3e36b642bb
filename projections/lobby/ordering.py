"""Exactly once and in order: what to do with a public message of a table (a run of its
events, versions ``first`` to ``last``), given the version its lobby entry is at.

The entry holds the version of the table's last event applied.  A message whose events
are all at or below it was applied before (a redelivery, or a copy the relay published
twice): it changes nothing.  One that goes on from the entry's version (its first event
the next version, or at or below it: the entry was rebuilt from the table's view in
the middle of its run) is applied, from the next version on: it advances the entry by
as many versions as it carries after it.  One that starts further on leaves a gap:
either its predecessor is still on its way (another instance holds it, or it waits
for a redelivery), and the message must wait; or the predecessor never reached the
stream (a dead letter, a retention limit), which the stream itself tells (the service
asks it, docs/design/lobby.md).
"""

from __future__ import annotations

from enum import Enum
from typing import Final

EVERY: Final = 0.25     # seconds: a table's entry is written at most once in this (lanes.py; the lag
                        # goal is 1 s: docs/design/lobby.md, "Cost")


class Place(Enum):
    SEEN = "seen"          # applied before: acknowledge, change nothing
    NEXT = "next"          # apply its events after the entry's version
    GAP = "gap"            # versions between are missing: wait, or find them lost


def seen(applied: int, last: int) -> bool:
    """Whether a message whose last event is at ``last`` was applied before by an entry
    that applied ``applied`` (0: no entry yet); told from its headers, before its body
    is decoded."""
    return last <= applied


def place(applied: int, first: int, last: int) -> Place:
    """Where a message of the events at versions ``first`` to ``last`` stands for an
    entry that applied ``applied`` (0: no entry yet)."""
    if seen(applied, last):
        return Place.SEEN
    if first <= applied + 1:
        return Place.NEXT
    return Place.GAP
