"""What this instance knows of each table's schedule subject, kept in memory so that
publishing a turn's schedule needs no read before it (docs/design/timer.md, "The last
schedule, in memory").

The timer service is the only writer of ``studroom.timer.sched.<table>``.  After its
own publish an instance knows the subject's last sequence and the turn it holds; a
turn notice from another instance tells it the same of theirs.  What it knows is only
a guess: every publish is still a compare-and-set on that sequence, so a guess that is
wrong (another instance wrote, a notice was lost, the schedule fired and left the
stream) costs one refused publish and one read, never a wrong schedule.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Final

import msgspec

KEPT: Final = 100_000                        # tables remembered (least recently used go first)
NO_TURN: Final = -1                          # the subject holds nothing this instance can name
_WRONG_LAST = re.compile(r"wrong last sequence: (\d+)")


class Last(msgspec.Struct, frozen=True):
    """A table's schedule subject as last seen: its last ``seq`` (0: empty), the turn
    it schedules, and whether this instance wrote it (``ours``: no other wheel holds a
    newer timer of the table, so the others need no notice)."""

    turn: int
    seq: int
    ours: bool = False


EMPTY: Final = Last(turn=NO_TURN, seq=0)


class LastSchedules:
    """table -> :class:`Last`, at most ``kept`` tables."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self.reads = 0                               # subjects read (nothing known, or a guess was wrong)
        self._last: OrderedDict[str, Last] = OrderedDict()

    def __len__(self) -> int:
        return len(self._last)

    def get(self, table_id: str) -> Last | None:
        return self._last.get(table_id)

    def put(self, table_id: str, last: Last) -> None:
        self._last[table_id] = last
        self._last.move_to_end(table_id)
        while len(self._last) > self.kept:
            self._last.popitem(last=False)

    def forget(self, table_id: str) -> None:
        self._last.pop(table_id, None)

    def heard(self, table_id: str, turn: int, seq: int) -> None:
        """Another instance published the table's ``turn`` at ``seq`` (its notice)."""
        known = self._last.get(table_id)
        if seq > 0 and (known is None or turn > known.turn):
            self.put(table_id, Last(turn=turn, seq=seq))


def actual_last(description: str | None) -> int | None:
    """The subject's real last sequence, as the server's refusal of a compare-and-set
    names it ("wrong last sequence: N"); None if it does not."""
    found = _WRONG_LAST.search(description or "")
    return int(found.group(1)) if found else None
