"""A sender's command ids: the sequence the table checks (docs/design/trust.md).

A command from a sender carries a decimal ``command_id`` greater than that sender's
previous one at the table; a lower or equal id is refused (``duplicate_command``).  A
client numbers its commands with the microseconds since the epoch, bumped to the
previous id + 1 when the clock has not moved on, so a restarted client continues
above its old ids without remembering them.  The table refuses an id more than five
minutes ahead of its own clock (``bad_command_id``, domain/command_ids.py): these ids
never are unless this machine's clock is that far ahead, and then every command is
refused with that code, saying so (the answer is to set the clock right and start
the client again: a refusal changes nothing, so no id was used up).
"""

from __future__ import annotations

import time
from collections.abc import Callable


def _micros() -> int:
    return time.time_ns() // 1000


class CommandIds:
    """One sender's ids, strictly increasing (``clock``: microseconds since the epoch)."""

    def __init__(self, clock: Callable[[], int] = _micros) -> None:
        self.clock = clock
        self.last = 0

    def next(self) -> str:
        self.last = max(self.clock(), self.last + 1)
        return str(self.last)
