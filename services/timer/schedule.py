"""The timer's message format: one JetStream message schedule per table.

A schedule is published on ``studroom.timer.sched.<table>`` with the headers
``Nats-Schedule: @at <deadline>`` and ``Nats-Schedule-Target:
studroom.timer.fire.<table>``; at the deadline the server publishes its body, a
:class:`TimerPayload`, on the target subject.  See docs/design/timer.md.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import msgspec

from ..wire import subjects

# Compare-and-set on the schedule subject: the server refuses the publish when another
# message was stored on the subject since the sequence named here.
EXPECTED_LAST_SUBJECT_SEQUENCE = "Nats-Expected-Last-Subject-Sequence"


class TimerPayload(msgspec.Struct, frozen=True, omit_defaults=True):
    """The body of a schedule and of the message it fires (no card, no seed)."""

    table_id: str
    turn: int
    deadline_ms: int
    seat: int | None = None
    kind: str = "act"


_payload_decoder = msgspec.json.Decoder(TimerPayload)
_encoder = msgspec.json.Encoder()


def encode_payload(payload: TimerPayload) -> bytes:
    return _encoder.encode(payload)


def decode_payload(data: bytes) -> TimerPayload:
    """Raises msgspec.DecodeError / ValidationError on a message that is not ours."""
    return _payload_decoder.decode(data)


def schedule_time(deadline_ms: int) -> str:
    """``@at`` with the deadline in RFC 3339 UTC, millisecond precision."""
    when = datetime.fromtimestamp(deadline_ms / 1000, UTC)
    return "@at " + when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{deadline_ms % 1000:03d}Z"


def schedule_headers(table_id: str, deadline_ms: int, expected_seq: int | None = None) -> dict[str, str]:
    """The headers of a table's schedule; ``expected_seq`` makes the publish a
    compare-and-set against the subject's last sequence (0: the subject is empty)."""
    headers = {
        "Nats-Schedule": schedule_time(deadline_ms),
        "Nats-Schedule-Target": subjects.timer_fire(table_id),
    }
    if expected_seq is not None:
        headers[EXPECTED_LAST_SUBJECT_SEQUENCE] = str(expected_seq)
    return headers


def now_ms() -> int:
    """The wall clock in ms since the epoch, the unit of every deadline."""
    return time.time_ns() // 1_000_000
