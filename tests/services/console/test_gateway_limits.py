"""The console's door limits with a clock of the test's own: a session's token bucket,
login attempts per name and address, per name, and per client address."""

from __future__ import annotations

from studroom.services.console.limits import (
    ATTEMPTS_PER_ADDRESS,
    FAILED_LOGINS_PER_NAME,
    FAILED_LOGINS_PER_NAME_AND_ADDRESS,
    WINDOW,
    LoginLimits,
    TokenBucket,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_allows_a_burst_then_its_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=20, burst=40, clock=clock)
    assert [bucket.take() for _ in range(40)] == [0.0] * 40
    wait = bucket.take()
    assert 0 < wait <= 1 / 20
    clock.now += 0.5                                    # ten more tokens
    assert [bucket.take() for _ in range(10)] == [0.0] * 10 and bucket.take() > 0
    clock.now += 100                                    # never more than the burst
    assert sum(bucket.take() == 0 for _ in range(100)) == 40


def test_failed_logins_of_a_name_from_an_address_wait_out_the_window_there_only() -> None:
    clock = Clock()
    limits = LoginLimits(clock=clock)
    for _ in range(FAILED_LOGINS_PER_NAME_AND_ADDRESS):
        assert limits.wait("10.0.0.1", "player.alice") == 0
        limits.failed("10.0.0.1", "player.alice")
    assert limits.wait("10.0.0.1", "player.alice") > 0         # the guesser waits ...
    assert limits.wait("10.0.0.2", "player.alice") == 0        # ... alice, at home, does not
    assert limits.wait("10.0.0.1", "player.bob") == 0          # another name: allowed
    clock.now += WINDOW
    assert limits.wait("10.0.0.1", "player.alice") == 0


def test_failed_logins_of_a_name_from_everywhere_are_capped_too() -> None:
    clock = Clock()
    limits = LoginLimits(clock=clock)
    for i in range(FAILED_LOGINS_PER_NAME):                     # one guess from each of many addresses
        assert limits.wait(f"10.0.{i // 250}.{i % 250}", "player.alice") == 0
        limits.failed(f"10.0.{i // 250}.{i % 250}", "player.alice")
    assert limits.wait("10.9.9.9", "player.alice") > 0
    clock.now += WINDOW
    limits.sweep()
    assert limits.wait("10.9.9.9", "player.alice") == 0


def test_attempts_from_one_address_are_capped_whatever_the_names() -> None:
    clock = Clock()
    limits = LoginLimits(clock=clock)
    assert all(limits.wait("10.0.0.1", f"player.p{i}") == 0 for i in range(ATTEMPTS_PER_ADDRESS))
    assert limits.wait("10.0.0.1", "player.another") > 0
    assert limits.wait("10.0.0.1", None) > 0                   # a spectator session too
    assert limits.wait("10.0.0.2", "player.another") == 0
    clock.now += WINDOW + 1
    limits.sweep()
    assert not limits.addresses.seen.get("10.0.0.1")
    assert limits.wait("10.0.0.1", "player.another") == 0
