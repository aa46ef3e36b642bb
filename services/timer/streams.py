"""What the timer service declares in JetStream, created idempotently by whichever
instance starts first (and again when deleted): the stream ``STUDROOM_TIMERS`` and the
two durable pull consumers every instance shares.
See docs/design/timer.md.
"""

from __future__ import annotations

import logging
from typing import Any

from nats.js.api import (
    ConsumerConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from ..wire import subjects
from ..wire.declared import Refused, ensure_consumer, ensure_stream
from ..wire.event_messages import marked_subjects
from ..wire.pull import shared_consumer
from .turns import INTEREST

__all__ = ["FIRES_CONSUMER", "TURNS_CONSUMER", "ensure_consumer", "ensure_timer_stream", "fires_consumer_config",
           "timer_stream_config", "turns_consumer_config"]

log = logging.getLogger("studroom.timer")

TURNS_CONSUMER = "studroom_timer"            # on STUDROOM_PUBLIC: messages with a TurnStarted, PauseStarted
FIRES_CONSUMER = "studroom_timer_fire"       # on STUDROOM_TIMERS: fired timers
TIMERS_MAX_BYTES = 64 * 1024 * 1024          # one schedule per table and the fires not yet taken: a few kB each
TIMER_MAX_SIZE = 64 * 1024                   # bytes of one schedule or fire (a few hundred in fact)


def timer_stream_config(replicas: int = 1) -> StreamConfig:
    """``STUDROOM_TIMERS``: schedules on, work queue, file storage; bounded (full, it
    drops its oldest messages: the server allows message schedules no other way; only
    the timer service writes it, a schedule per table, and its wheel fires the turns
    whatever the stream keeps; docs/design/timer.md)."""
    return StreamConfig(
        name=subjects.TIMER_STREAM,
        subjects=[subjects.all_timer_schedules(), subjects.all_timer_fires()],
        retention=RetentionPolicy.WORK_QUEUE,
        storage=StorageType.FILE,
        num_replicas=replicas,
        allow_msg_schedules=True,
        allow_direct=True,
        max_bytes=TIMERS_MAX_BYTES,
        max_msg_size=TIMER_MAX_SIZE,
        description="studroom timer service: one pending turn timer per table, fired timers",
    )


async def ensure_timer_stream(js: Any, replicas: int = 1) -> None:
    """Create ``STUDROOM_TIMERS``, or bring it up to date: an existing stream without
    message schedules gets them (without, no timer would ever fire); a server that
    refuses stops the service with one line (``declared.Refused``)."""
    await ensure_stream(js, timer_stream_config(replicas))
    info = await js.stream_info(subjects.TIMER_STREAM)
    if not info.config.allow_msg_schedules:      # a server before 2.12 drops the switch
        raise Refused(f"stream {subjects.TIMER_STREAM} has no message schedules after its update: the NATS "
                      f"server is too old (message schedules need nats-server 2.12 or newer); upgrade it")


TURNS_ACK_WAIT = 5.0      # seconds: a turn's message not acknowledged comes again after this


def turns_consumer_config(ack_wait: float = TURNS_ACK_WAIT) -> ConsumerConfig:
    """Only the messages holding an event that starts a timer (their subject's mark
    says so: ``turns.INTEREST``): the server sends this consumer nothing else.  A
    consumer of an older version (every public event, or one subject per event type) is
    updated in place by ``ensure_consumer``: the server allows a new filter on a live
    consumer, which keeps its position."""
    return shared_consumer(TURNS_CONSUMER, marked_subjects(INTEREST), ack_wait,
                           "studroom timer service: TurnStarted, PauseStarted -> schedules")


def fires_consumer_config(ack_wait: float = 10.0) -> ConsumerConfig:
    return shared_consumer(FIRES_CONSUMER, subjects.all_timer_fires(), ack_wait,
                           "studroom timer service: fired turn timers -> Timeout commands")
