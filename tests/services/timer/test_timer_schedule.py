"""The timer's schedule format, without servers: the ``@at`` time, the headers, the body."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest
from studroom.services.timer.schedule import (
    EXPECTED_LAST_SUBJECT_SEQUENCE,
    TimerPayload,
    decode_payload,
    encode_payload,
    now_ms,
    schedule_headers,
    schedule_time,
)
from studroom.services.wire import subjects


def _ms(*fields: int, millis: int = 0) -> int:
    return int(datetime(*fields, tzinfo=UTC).timestamp()) * 1000 + millis


def test_schedule_time_is_rfc3339_utc_with_milliseconds() -> None:
    assert schedule_time(_ms(2026, 11, 29, 17, 5, 9, millis=42)) == "@at 2026-11-29T17:05:09.042Z"


@pytest.mark.parametrize(("millis", "text"), [(0, "000"), (7, "007"), (999, "999")])
def test_schedule_time_pads_the_milliseconds_to_three_digits(millis: int, text: str) -> None:
    assert schedule_time(_ms(2027, 1, 1, 0, 0, 0, millis=millis)) == f"@at 2027-01-01T00:00:00.{text}Z"


def test_schedule_time_does_not_round_up_into_the_next_second() -> None:
    # A deadline is never moved earlier nor later than its millisecond.
    assert schedule_time(_ms(2026, 12, 31, 23, 59, 59, millis=999)) == "@at 2026-12-31T23:59:59.999Z"


def test_schedule_time_is_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert schedule_time(0) == "@at 1970-01-01T00:00:00.000Z"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_schedule_headers_fire_on_the_tables_own_fire_subject() -> None:
    deadline = _ms(2026, 11, 29, 12, 0, 0, millis=500)
    assert schedule_headers("t42", deadline) == {
        "Nats-Schedule": "@at 2026-11-29T12:00:00.500Z",
        "Nats-Schedule-Target": subjects.timer_fire("t42"),
    }
    assert subjects.timer_fire("t42") == "studroom.timer.fire.t42"


@pytest.mark.parametrize("expected", [0, 17])
def test_schedule_headers_carry_the_compare_and_set_sequence(expected: int) -> None:
    headers = schedule_headers("t42", 1_000, expected)
    assert headers[EXPECTED_LAST_SUBJECT_SEQUENCE] == str(expected)
    assert EXPECTED_LAST_SUBJECT_SEQUENCE == "Nats-Expected-Last-Subject-Sequence"


def test_schedule_headers_refuse_a_table_id_that_is_no_subject_token() -> None:
    with pytest.raises(subjects.BadName):
        schedule_headers("a.b", 1_000)


def test_payload_round_trip() -> None:
    payload = TimerPayload(table_id="t1", turn=12, deadline_ms=1_700_000_000_123, seat=3, kind="show")
    assert decode_payload(encode_payload(payload)) == payload


def test_payload_wire_format_omits_defaults() -> None:
    payload = TimerPayload(table_id="t1", turn=2, deadline_ms=5)
    assert msgspec.json.decode(encode_payload(payload)) == {"table_id": "t1", "turn": 2, "deadline_ms": 5}
    assert decode_payload(b'{"table_id":"t1","turn":2,"deadline_ms":5}') == TimerPayload(
        table_id="t1", turn=2, deadline_ms=5, seat=None, kind="act")


@pytest.mark.parametrize("data", [b"not json", b'{"turn": 1}', b'{"table_id":"t","turn":"x","deadline_ms":1}'])
def test_a_message_that_is_not_a_payload_is_refused(data: bytes) -> None:
    with pytest.raises((msgspec.DecodeError, msgspec.ValidationError)):
        decode_payload(data)


def test_now_ms_is_the_wall_clock_in_milliseconds() -> None:
    import time

    before = int(time.time() * 1000)
    now = now_ms()
    assert before - 1 <= now <= int(time.time() * 1000) + 1
