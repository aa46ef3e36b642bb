"""What the bots of one process count: actions, refusals, errors and command latencies
(the room's progress line and summary, the room benchmark)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Final

from ..runtime.observability.stats import percentile

LATENCY_SAMPLES: Final = 200_000

# An error the bots count that is no reply code: a relay message that does not decode.
BAD_MESSAGE: Final = "bad_message"


@dataclass
class BotStats:
    """Counters shared by the bots of one process."""

    actions: int = 0               # accepted Act / Show / Muck / PostAnte
    commands: int = 0              # every command sent
    refused_stale: int = 0         # turns that were over when the answer arrived
    errors: int = 0                # unexpected refusals, timeouts, bad messages
    hands: int = 0                 # HandEnded seen (counted once per table by seat owner)
    public_messages: int = 0       # relay messages heard on the tables' public subjects (the room's fan-out)
    # seconds, request -> reply, of the latest commands (bounded: a room runs for days)
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    error_codes: dict[str, int] = field(default_factory=dict)
    keep_latencies: bool = True

    def error(self, code: str) -> None:
        self.errors += 1
        self.error_codes[code] = self.error_codes.get(code, 0) + 1

    def latency(self, seconds: float) -> None:
        """One command's request -> reply time (kept unless ``keep_latencies`` is off)."""
        if self.keep_latencies:
            self.latencies.append(seconds)

    def latency_percentile(self, q: float) -> float:
        """The q-th percentile (0..100) of the kept latencies, in seconds; NaN for none."""
        return percentile(self.latencies, q)
