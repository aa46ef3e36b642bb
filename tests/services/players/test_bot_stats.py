"""What the bots count: latency percentiles by nearest rank over a bounded window."""

from __future__ import annotations

import math

from studroom.services.players.stats import LATENCY_SAMPLES, BotStats


def test_latency_percentile_is_the_nearest_rank() -> None:
    stats = BotStats()
    for ms in reversed(range(101)):              # 0 .. 100 ms, in any order
        stats.latency(ms / 1000)
    assert stats.latency_percentile(0) == 0.0
    assert stats.latency_percentile(50) == 0.050
    assert stats.latency_percentile(99) == 0.099
    assert stats.latency_percentile(100) == 0.100


def test_latency_percentile_of_no_samples_is_nan() -> None:
    assert math.isnan(BotStats().latency_percentile(50))


def test_latencies_keep_only_the_latest_samples() -> None:
    stats = BotStats()
    for _ in range(LATENCY_SAMPLES):
        stats.latency(1.0)                       # old and slow ...
    for _ in range(LATENCY_SAMPLES // 2 + 1):
        stats.latency(0.001)                     # ... pushed out by the newer half and more
    assert len(stats.latencies) == LATENCY_SAMPLES
    assert stats.latency_percentile(50) == 0.001


def test_latencies_off_keeps_none() -> None:
    stats = BotStats(keep_latencies=False)
    stats.latency(0.002)
    assert not stats.latencies and math.isnan(stats.latency_percentile(99))


def test_errors_are_counted_by_code() -> None:
    stats = BotStats()
    for code in ("timeout", "internal", "timeout"):
        stats.error(code)
    assert stats.errors == 3 and stats.error_codes == {"timeout": 2, "internal": 1}
