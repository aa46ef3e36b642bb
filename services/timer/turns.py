"""A turn read from the public stream becomes its table's ONE pending schedule.

The relay's ``TurnStarted`` (and ``PauseStarted``, the pause before a hand, whose
timer's kind is "pause") carries the turn and its deadline.  Its schedule is published
by compare-and-set on the table's schedule subject: a turn not newer than the pending
one is skipped (superseded: a redelivery, or another instance was first), a write by
another instance meanwhile makes it look again.  docs/design/timer.md.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import nats.errors
import nats.js.errors

from ..wire import subjects
from .schedule import TimerPayload, decode_payload, encode_payload, schedule_headers

# The public events that start a timer, and the kind of a timer without one of its own.
WANTED_EVENTS: Final = {"TurnStarted": "act", "PauseStarted": "pause"}
WRONG_LAST_SEQUENCE: Final = 10071           # JetStream API error code
PUBLISH_ATTEMPTS: Final = 10                 # compare-and-set rounds before a redelivery


class TurnHead(msgspec.Struct, frozen=True):
    """The few fields of a public event the timer reads (others are ignored)."""

    type: str
    turn: int | None = None
    seat: int | None = None
    kind: str | None = None
    deadline_ms: int | None = None


decode_head = msgspec.json.Decoder(TurnHead).decode


def timer_of(table_id: str, head: TurnHead) -> TimerPayload | None:
    """The timer a wanted event sets; None if it lacks its turn or deadline."""
    if head.turn is None or head.deadline_ms is None:
        return None
    return TimerPayload(table_id=table_id, turn=head.turn, deadline_ms=head.deadline_ms, seat=head.seat,
                        kind=head.kind or WANTED_EVENTS[head.type])


async def publish_schedule(js: Any, timer: TimerPayload) -> bool:
    """Publish the table's schedule unless one of this turn or a newer one is pending
    (False: superseded); raises ``nats.errors.TimeoutError`` after
    ``PUBLISH_ATTEMPTS`` lost races (the event is redelivered)."""
    subject = subjects.timer_schedule(timer.table_id)
    payload = encode_payload(timer)
    for _ in range(PUBLISH_ATTEMPTS):
        try:
            pending = await js.get_last_msg(subjects.TIMER_STREAM, subject, direct=True)
        except nats.js.errors.NotFoundError:
            pending = None
        expected = 0
        if pending is not None:
            try:
                if decode_payload(pending.data).turn >= timer.turn:
                    return False
            except (msgspec.DecodeError, msgspec.ValidationError):
                pass                               # not ours: replace it
            expected = pending.seq
        try:
            await js.publish(subject, payload, headers=schedule_headers(timer.table_id, timer.deadline_ms, expected))
        except nats.js.errors.APIError as e:
            if e.err_code == WRONG_LAST_SEQUENCE:
                continue                          # someone wrote meanwhile: look again
            raise
        return True
    raise nats.errors.TimeoutError  # pragma: no cover (ten lost races: retry later)
