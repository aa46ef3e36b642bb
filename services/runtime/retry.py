"""The one retry policy of the room: how long to wait before trying again.

Every loop that tries again after a transient failure (a request without an answer, a
server not up yet, a lost connection, a dead child process) takes its pauses from a
:class:`Backoff`: the pause doubles from ``first`` up to ``longest``, and each pause is
drawn between half of it and all of it ("equal jitter").  The jitter matters when many
clients fail together: a restarted table service is otherwise hit by every bot again at
the same instants.  Half the pause stays as a floor, so a loop never spins.

Why our own twenty lines and not ``tenacity`` or ``backoff``: the loops differ in shape
(a request retried until a deadline, a reconnect loop until a stop event, a supervisor
whose wait resets after a healthy minute, a relay that retries forever), and their
decorators fit only the first; the policy (the numbers and the jitter) is what must be
one, and an iterator of pauses serves every shape.  docs/design/retries.md lists the
loops and their numbers.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    first: float = 0.05      # seconds: the first pause (before jitter)
    longest: float = 1.0     # seconds: no pause is longer
    factor: float = 2.0

    def pauses(self, rng: random.Random | None = None) -> Iterator[float]:
        """The pauses, without end: ``first``, doubled up to ``longest``, each jittered."""
        draw = (rng or random).uniform
        pause = self.first
        while True:
            yield draw(pause / 2, pause)
            pause = min(pause * self.factor, self.longest)

    def ceiling(self, attempt: int) -> float:
        """The longest the ``attempt``-th pause (0 = the first) can be."""
        return min(self.first * self.factor ** attempt, self.longest)


REQUEST = Backoff(first=0.05, longest=1.0)     # a client's request to a service (table, cashier)
RECONNECT = Backoff(first=0.5, longest=10.0)   # a server not up yet or gone: NATS, PostgreSQL
RESTART = Backoff(first=0.5, longest=10.0)     # the supervisor starting a dead child again
