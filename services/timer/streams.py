"""What the timer service declares in JetStream, created idempotently by whichever
instance starts first (and again when deleted): the stream ``STUDROOM_TIMERS`` and the
two durable pull consumers every instance shares.
See docs/design/timer.md.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import nats.errors
import nats.js.errors
from nats.js.api import (
    ConsumerConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from ..wire import subjects
from ..wire.pull import shared_consumer

log = logging.getLogger("studroom.timer")

TURNS_CONSUMER = "studroom_timer"            # on STUDROOM_PUBLIC: TurnStarted
FIRES_CONSUMER = "studroom_timer_fire"       # on STUDROOM_TIMERS: fired timers


async def ensure_timer_stream(js: Any, replicas: int = 1) -> None:
    """``STUDROOM_TIMERS``: schedules on, work queue, file storage (idempotent)."""
    config = StreamConfig(
        name=subjects.TIMER_STREAM,
        subjects=[subjects.all_timer_schedules(), subjects.all_timer_fires()],
        retention=RetentionPolicy.WORK_QUEUE,
        storage=StorageType.FILE,
        num_replicas=replicas,
        allow_msg_schedules=True,
        allow_direct=True,
        description="studroom timer service: one pending turn timer per table, fired timers",
    )
    try:
        await js.add_stream(config)
    except nats.js.errors.BadRequestError as e:
        # It exists with other settings (e.g. another replica count): use it as is.
        info = await js.stream_info(subjects.TIMER_STREAM)
        if not info.config.allow_msg_schedules:
            raise RuntimeError(f"{subjects.TIMER_STREAM} exists without message schedules") from e
        log.info("%s exists with other settings; using it: %s", subjects.TIMER_STREAM, e.description)


async def ensure_consumer(js: Any, stream: str, config: ConsumerConfig) -> None:
    """Create the durable consumer ``config`` on ``stream`` unless it exists."""
    try:
        await js.add_consumer(stream, config)
    except nats.js.errors.BadRequestError as e:
        # It exists with other settings (an older version of this service): keep it.
        await js.consumer_info(stream, config.durable_name)
        log.info("consumer %s exists with other settings; using it: %s", config.durable_name, e.description)


def turns_consumer_config(ack_wait: float = 5.0) -> ConsumerConfig:
    return shared_consumer(TURNS_CONSUMER, subjects.all_public_events(), ack_wait,
                           "studroom timer service: TurnStarted -> schedules")


def fires_consumer_config(ack_wait: float = 10.0) -> ConsumerConfig:
    return shared_consumer(FIRES_CONSUMER, subjects.all_timer_fires(), ack_wait,
                           "studroom timer service: fired turn timers -> Timeout commands")


async def wait_for_stream(js: Any, stream: str, stop: asyncio.Event | None, poll: float = 0.5) -> bool:
    """Wait until ``stream`` exists (the relay creates ``STUDROOM_PUBLIC``)."""
    said = False
    while stop is None or not stop.is_set():
        try:
            await js.stream_info(stream)
            return True
        except nats.js.errors.NotFoundError:
            if not said:
                log.info("waiting for stream %s (the relay creates it)", stream)
                said = True
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError, nats.errors.ConnectionClosedError):
            pass
        await asyncio.sleep(poll)
    return False
