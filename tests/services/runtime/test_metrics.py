"""The metrics' exposition (prometheus_client's, over our collectors) and the readings of $SRV.STATS."""

from __future__ import annotations

import asyncio

import msgspec
from studroom.services.runtime.observability.metrics import (
    Histogram,
    Poll,
    Registry,
    by_label,
    counter,
    gauge,
)
from studroom.services.table.metrics import CommandMeter
from studroom.services.timer.metrics import timer_metrics
from studroom.services.timer.stats import TimerStats
from studroom.services.wire.protocol import ErrorBody, Reply

encode_reply = msgspec.json.Encoder().encode


def test_the_exposition_has_help_type_labels_and_one_family_per_name() -> None:
    registry = Registry(service="table", instance="t-1")
    errors = {"not_your_turn": 3, 'odd"code': 1}
    registry.add(lambda: [counter("commands", "commands answered", 12),
                          by_label("counter", "command_errors", "refusals by code", "code", errors)])
    registry.add(lambda: [gauge("table_partitions", "partitions served", 8)])
    body, content_type = registry.exposition()
    text = body.decode()
    assert content_type.startswith("text/plain; version=0.0.4")
    assert text.endswith("\n")
    assert "# HELP studroom_commands_total commands answered\n# TYPE studroom_commands_total counter\n" in text
    assert 'studroom_commands_total{instance="t-1",service="table"} 12.0\n' in text
    assert 'studroom_command_errors_total{code="not_your_turn",instance="t-1",service="table"} 3.0\n' in text
    assert 'studroom_command_errors_total{code="odd\\"code",instance="t-1",service="table"} 1.0\n' in text
    assert text.count("# TYPE studroom_command_errors_total counter") == 1
    assert "# TYPE studroom_table_partitions gauge\n" in text
    assert 'studroom_table_partitions{instance="t-1",service="table"} 8.0\n' in text


def test_a_scraper_asking_for_openmetrics_gets_it() -> None:
    registry = Registry(service="ledger", instance="l-1")
    registry.add(lambda: [counter("ledger_booked", "events booked", 3)])
    body, content_type = registry.exposition("application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    assert body.decode().endswith("# EOF\n")
    assert 'studroom_ledger_booked_total{instance="l-1",service="ledger"} 3.0\n' in body.decode()


def test_a_histogram_has_cumulative_buckets_sum_and_count() -> None:
    latency = Histogram((0.01, 0.1))
    for seconds in (0.005, 0.05, 0.05, 3.0):
        latency.observe(seconds)
    registry = Registry()
    registry.add(lambda: [latency.metric("command_seconds", "latency")])
    lines = registry.exposition()[0].decode().splitlines()
    assert "# TYPE studroom_command_seconds histogram" in lines
    assert 'studroom_command_seconds_bucket{le="0.01"} 1.0' in lines
    assert 'studroom_command_seconds_bucket{le="0.1"} 3.0' in lines
    assert 'studroom_command_seconds_bucket{le="+Inf"} 4.0' in lines
    assert "studroom_command_seconds_count 4.0" in lines
    assert "studroom_command_seconds_sum 3.105" in lines
    assert registry.readings() == {"command_seconds_sum": 3.105, "command_seconds_count": 4}


def test_a_broken_collector_hides_no_other_and_a_failed_poll_keeps_its_last_readings() -> None:
    readings = [{"ledger": 5.0}]

    async def read() -> dict[str, float]:
        if not readings:
            raise ConnectionError("database away")
        return readings.pop()

    registry = Registry()
    registry.add(lambda: [1 / 0])                     # type: ignore[list-item]
    registry.add(lambda: [counter("ledger_booked", "booked", 9)])
    poll = Poll("projection_lag_events", "lag", "projection", read)
    registry.poll(poll)
    asyncio.run(poll.refresh())
    asyncio.run(poll.refresh())
    assert registry.readings() == {"ledger_booked_total": 9, 'projection_lag_events{projection="ledger"}': 5.0}


def test_the_table_times_each_request_to_its_reply_and_counts_refusals_by_code() -> None:
    meter = CommandMeter()
    meter.received("_INBOX.player.ann.1")
    meter.received("_INBOX.player.bob.2")
    meter.received(None)                                   # no reply wanted: not timed
    meter.replied("_INBOX.player.ann.1", encode_reply(Reply(ok=True, version=3)))
    meter.replied("_INBOX.player.bob.2", encode_reply(Reply(ok=False, error=ErrorBody("not_your_turn", "wait"))))
    meter.replied("_INBOX.player.bob.2", b"{}")            # a second reply to the same subject: not counted
    assert meter.answered == 2 and meter.latency.count == 2
    assert meter.errors == {"not_your_turn": 1}


def test_the_timer_lateness_is_given_as_quantiles_in_seconds() -> None:
    stats = TimerStats()
    stats.fire_lateness_ms.extend([10.0] * 98 + [500.0, 2000.0])
    registry = Registry()
    registry.add(timer_metrics(stats))
    readings = registry.readings()
    assert readings['timer_lateness_seconds{kind="fire",quantile="0.5"}'] == 0.01
    assert readings['timer_lateness_seconds{kind="fire",quantile="1"}'] == 2.0
    assert not any('kind="done"' in name for name in readings)     # no timer done yet: no sample
