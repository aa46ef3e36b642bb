"""The console's door limits: a session's op quota (a token bucket) and the login
attempts per name and address, per name and per client address (sliding windows).  The clock is passed
in (monotonic seconds) so the tests need not wait."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from ..wire.door import Buckets, Quota

OPS_PER_SECOND = 20.0
OPS_BURST = 40
# A name's lock is per address: a stranger's wrong guesses must not lock the player himself
# out from his own address. A name's failures from all addresses are capped too, higher:
# guessing from many addresses is slowed to that rate, at the price of locking the name.
FAILED_LOGINS_PER_NAME_AND_ADDRESS = 5   # failed attempts of one name from one address ...
FAILED_LOGINS_PER_NAME = 100        # ... of one name from anywhere ...
ATTEMPTS_PER_ADDRESS = 30           # ... and attempts (logins, spectator sessions) from one address ...
WINDOW = 300.0                      # ... in this many seconds


class TokenBucket:
    """One session's op quota: the doors' token bucket (``wire/door.Buckets``) with one
    key; ``take`` answers 0 when one was taken, else the seconds until one will be there."""

    def __init__(self, rate: float = OPS_PER_SECOND, burst: int = OPS_BURST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.quota, self.clock = Quota(rate, burst), clock
        self._bucket = Buckets(max_keys=1)

    def take(self) -> float:
        return self._bucket.take(None, self.quota, self.clock())


class Window:
    """At most ``most`` events per key in the last ``window`` seconds."""

    def __init__(self, most: int, window: float = WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        self.most, self.window, self.clock = most, window, clock
        self.seen: dict[str, deque[float]] = {}

    def wait(self, key: str) -> float:
        """0 if another event of ``key`` is allowed now, else the seconds until it is."""
        times = self._times(key)
        return 0.0 if len(times) < self.most else times[0] + self.window - self.clock()

    def add(self, key: str) -> None:
        self._times(key).append(self.clock())

    def clear(self, key: str) -> None:
        self.seen.pop(key, None)

    def _times(self, key: str) -> deque[float]:
        now = self.clock()
        times = self.seen.setdefault(key, deque())
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def sweep(self) -> None:
        """Forget the keys whose events are all older than the window."""
        now = self.clock()
        for key in [k for k, times in self.seen.items() if not times or times[-1] <= now - self.window]:
            del self.seen[key]


class LoginLimits:
    """Failed logins per name and address and per name, attempts per client address."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.guesses = Window(FAILED_LOGINS_PER_NAME_AND_ADDRESS, clock=clock)
        self.names = Window(FAILED_LOGINS_PER_NAME, clock=clock)
        self.addresses = Window(ATTEMPTS_PER_ADDRESS, clock=clock)

    def wait(self, address: str, name: str | None) -> float:
        """0 when this attempt may go on (and is counted for the address), else the
        seconds to wait."""
        wait = self.addresses.wait(address)
        if name is not None:
            wait = max(wait, self.guesses.wait(_guess(address, name)), self.names.wait(name))
        if wait <= 0:
            self.addresses.add(address)
        return wait

    def failed(self, address: str, name: str) -> None:
        self.guesses.add(_guess(address, name))
        self.names.add(name)

    def sweep(self) -> None:
        self.guesses.sweep()
        self.names.sweep()
        self.addresses.sweep()


def _guess(address: str, name: str) -> str:
    return f"{address} {name}"
