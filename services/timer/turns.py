"""A turn read from the public stream becomes its table's ONE pending schedule.

The relay's ``TurnStarted`` (and ``PauseStarted``, the pause before a hand, whose
timer's kind is "pause") carries the turn and its deadline; of a message's events (a
run of one table's, ``wire/event_messages.py``) only the last of these counts, the
earlier ones being over.  Its schedule is published by compare-and-set on the table's
schedule subject, against what this instance knows of it (``last_schedules.py``: in
memory, read once when it knows nothing): a turn not newer than the known one is
skipped (superseded: a redelivery, or another instance was first), a write by another
instance meanwhile makes it look again.  docs/design/timer.md.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import nats.errors
import nats.js.errors
from studroom.domain.events import PauseStarted, TurnStarted

from ..wire import event_messages, subjects
from .last_schedules import EMPTY, NO_TURN, Last, LastSchedules, actual_last
from .publisher import SchedulePublisher
from .schedule import TimerPayload, decode_payload, encode_payload, schedule_headers

# The public events that start a timer, and the kind of a timer whose event has none of
# its own: the ONE list the handler (service.py) reads a message by.  The relay marks a
# message holding one of them for the timer's interest (``event_messages.TURNS``, what
# the turns consumer filters on, streams.py): a test keeps the two the same.
WANTED_EVENTS: Final = {TurnStarted.__name__: "act", PauseStarted.__name__: "pause"}
INTEREST: Final = event_messages.TURNS
WRONG_LAST_SEQUENCE: Final = 10071           # JetStream API error code
PUBLISH_ATTEMPTS: Final = 10                 # compare-and-set rounds before a redelivery


class TurnHead(msgspec.Struct, frozen=True):
    """The few fields of a public event the timer reads (others are ignored)."""

    type: str
    turn: int | None = None
    seat: int | None = None
    kind: str | None = None
    deadline_ms: int | None = None


_decode_heads = event_messages.decoding(TurnHead)


def turns_of(data: bytes) -> list[TurnHead]:
    """A public message's events that start a timer, in order (its last one is the
    table's turn; the earlier ones are over).  Reads only their heads, a first-format
    body (one event, an object) too; raises msgspec.DecodeError or
    msgspec.ValidationError for anything else."""
    return [head for head in _decode_heads(data) if head.type in WANTED_EVENTS]


def timer_of(table_id: str, head: TurnHead) -> TimerPayload | None:
    """The timer a wanted event sets; None if it lacks its turn or deadline."""
    if head.turn is None or head.deadline_ms is None:
        return None
    return TimerPayload(table_id=table_id, turn=head.turn, deadline_ms=head.deadline_ms, seat=head.seat,
                        kind=head.kind or WANTED_EVENTS[head.type])


class Published(msgspec.Struct, frozen=True):
    """A schedule stored; ``tell``: another instance may hold an older timer of the
    table in its wheel (the last schedule before this one was not this instance's)."""

    seq: int
    tell: bool


async def publish_schedule(js: Any, publisher: SchedulePublisher, timer: TimerPayload,
                           known: LastSchedules) -> Published | None:
    """Publish the table's schedule (through ``publisher``; ``js`` reads the subject)
    unless one of this turn or a newer one is known (None: superseded); raises
    ``nats.errors.TimeoutError`` after ``PUBLISH_ATTEMPTS`` lost races (the event is
    redelivered)."""
    table_id = timer.table_id
    subject = subjects.timer_schedule(table_id)
    payload = encode_payload(timer)
    last = known.get(table_id)
    for _ in range(PUBLISH_ATTEMPTS):
        if last is not None and last.turn >= timer.turn:
            last = None              # rare (a redelivery, a race): decided on the subject as stored
        if last is None:
            known.reads += 1
            last = await read_last(js, subject)
            if last.turn >= timer.turn:
                known.put(table_id, last)
                return None
        try:
            ack = await publisher.publish(subject, payload, schedule_headers(table_id, timer.deadline_ms, last.seq))
        except nats.js.errors.APIError as e:
            if e.err_code != WRONG_LAST_SEQUENCE:
                raise
            known.forget(table_id)
            # someone wrote meanwhile (look again), or the schedule fired and left the
            # subject empty (the server says 0: publish on it at once)
            last = EMPTY if actual_last(e.description) == 0 else None
            continue
        known.put(table_id, Last(turn=timer.turn, seq=ack.seq, ours=True))
        return Published(seq=ack.seq, tell=not last.ours)
    raise nats.errors.TimeoutError  # pragma: no cover (ten lost races: retry later)


async def read_last(js: Any, subject: str) -> Last:
    """The subject's pending schedule as stored now (a direct get)."""
    try:
        pending = await js.get_last_msg(subjects.TIMER_STREAM, subject, direct=True)
    except nats.js.errors.NotFoundError:
        return EMPTY
    try:
        turn = decode_payload(pending.data).turn
    except (msgspec.DecodeError, msgspec.ValidationError):
        turn = NO_TURN                             # not ours: replace it
    return Last(turn=turn, seq=pending.seq)
