"""A sender's command ids (THE TRUST DESIGN): decimal microseconds since the epoch,
strictly increasing even when the clock stands still or goes back, so a restarted
client continues above the ids it sent before."""

from __future__ import annotations

import time

from studroom.services.client.ids import CommandIds


def _micros() -> int:
    return time.time_ns() // 1000


def test_an_id_is_the_microseconds_since_the_epoch_in_decimal() -> None:
    before = _micros()
    n = CommandIds().next()
    after = _micros()
    assert n.isdigit() and before <= int(n) <= after < 2**63


def test_a_clock_that_stands_still_or_goes_back_is_bumped_to_the_previous_id_plus_one() -> None:
    readings = iter([1_000, 1_000, 900, 5_000])
    ids = CommandIds(lambda: next(readings))
    assert [ids.next() for _ in range(4)] == ["1000", "1001", "1002", "5000"]


def test_a_restarted_client_continues_above_its_old_ids() -> None:
    old = CommandIds()
    sent = [int(old.next()) for _ in range(10_000)]      # a burst: bumped ahead of the clock
    assert sent == sorted(set(sent))
    ahead = max(sent) - _micros()                         # at most the burst's length
    time.sleep(max(ahead, 0) / 1e6 + 0.001)               # a restart takes at least that long
    assert int(CommandIds().next()) > max(sent)
