"""Declared infrastructure: the streams, consumers and KV buckets a service needs are
written in its code and created, or brought up to date, at every start (no manual
``nats stream add`` / ``nats kv add``).  Idempotent: declaring twice changes nothing,
and any number of instances may declare at once.  docs/design/operations-checks.md.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import nats.errors
import nats.js.errors
from nats.js.api import ConsumerConfig, DiscardPolicy, KeyValueConfig, StreamConfig

from .subjects import bucket_stream

log = logging.getLogger("studroom.declared")

# What a declaration keeps up to date on an existing stream (its limits and switches);
# a field the declaration leaves unset (None, 0, False: the server's default) is the
# operator's.  Storage and retention cannot
# change on a live stream: a difference there is logged, not fixed.
UPDATED_FIELDS = ("max_age", "max_bytes", "max_msg_size", "discard", "duplicate_window", "allow_direct",
                  "allow_msg_schedules")
FIXED_FIELDS = ("storage", "retention")

CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"

MIN_NATS_VERSION = (2, 12, 0)     # JetStream message schedules (the timers' stream)


class Refused(SystemExit):
    """The server cannot be made what the service needs: the process stops with this
    one line (``process.run`` logs it), which names the fix."""


def drift(have: StreamConfig, wanted: StreamConfig) -> dict[str, Any]:
    """The changes that bring ``have`` up to ``wanted`` (subjects are added, never
    removed: an operator may have added his own)."""
    changes: dict[str, Any] = {}
    if not set(wanted.subjects or []) <= set(have.subjects or []):
        changes["subjects"] = sorted(set(have.subjects or []) | set(wanted.subjects or []))
    for name in UPDATED_FIELDS:
        want, got = getattr(wanted, name), getattr(have, name)
        if not want or want == -1:                     # -1: the client's "no limit", never declared
            continue
        same = abs((got or 0) - want) <= 1e-3 if isinstance(want, float) else got == want
        if not same:
            changes[name] = want
    return changes


async def ensure_stream(js: Any, wanted: StreamConfig) -> str:
    """Create ``wanted``, or update the existing stream's declared fields; which of
    :data:`CREATED`, :data:`UPDATED`, :data:`UNCHANGED`.  :class:`Refused` when the
    server refuses the update (e.g. it cannot reserve ``max_bytes``)."""
    try:
        info = await js.stream_info(wanted.name)
    except nats.js.errors.NotFoundError:
        try:
            await js.add_stream(wanted)
            return CREATED
        except nats.js.errors.BadRequestError as e:
            if e.err_code != 10058:                   # 10058: created meanwhile by another instance
                raise _refused(wanted.name, "created", e) from e
            info = await js.stream_info(wanted.name)
    return await _bring_up_to_date(js, info.config, wanted)


async def ensure_limits(js: Any, wanted: StreamConfig) -> str:
    """Bring the existing stream ``wanted.name`` up to ``wanted``'s declared fields (a
    KV bucket's stream, made by the client's own ``create_key_value``)."""
    return await _bring_up_to_date(js, (await js.stream_info(wanted.name)).config, wanted)


async def _bring_up_to_date(js: Any, have: StreamConfig, wanted: StreamConfig) -> str:
    for name in FIXED_FIELDS:
        if getattr(wanted, name) is not None and getattr(have, name) != getattr(wanted, name):
            log.warning("stream %s has %s %s (declared: %s); it cannot change on a live stream",
                        wanted.name, name, getattr(have, name), getattr(wanted, name))
    changes = drift(have, wanted)
    if not changes:
        return UNCHANGED
    try:
        await js.update_stream(have.evolve(**changes))
    except nats.js.errors.APIError as e:
        raise _refused(wanted.name, f"updated ({', '.join(sorted(changes))})", e) from e
    log.info("stream %s updated: %s", wanted.name, ", ".join(f"{k}={v}" for k, v in sorted(changes.items())))
    return UPDATED


def _refused(stream: str, what: str, e: nats.js.errors.APIError) -> Refused:
    return Refused(f"stream {stream} cannot be {what}: the NATS server says {e.description!r} "
                   f"(code {e.err_code}); fix the stream by hand (nats stream edit) or delete it, "
                   f"then start again")


async def ensure_consumer(js: Any, stream: str, config: ConsumerConfig) -> None:
    """Create the durable consumer ``config`` on ``stream``, or update it (the server
    changes what may change on a live consumer); one that differs in what may not
    change (its start, its filter) is kept as it is."""
    try:
        await js.add_consumer(stream, config)
    except nats.js.errors.BadRequestError as e:
        await js.consumer_info(stream, config.durable_name)
        log.info("consumer %s exists with other settings; using it: %s", config.durable_name, e.description)


def bucket_limits(bucket: KeyValueConfig, discard: DiscardPolicy | None = None) -> StreamConfig:
    """What a declaration keeps up to date on a KV bucket's stream: its bounds (bytes,
    a value's size, age) and, if given, what goes when it is full (the client creates
    every bucket refusing new writes)."""
    return StreamConfig(name=bucket_stream(bucket.bucket), max_bytes=bucket.max_bytes, max_msg_size=bucket.max_value_size,
                        max_age=bucket.ttl, discard=discard)


async def ensure_bucket(js: Any, bucket: KeyValueConfig, discard: DiscardPolicy | None = None) -> Any:
    """The KV bucket, created if missing (by this or another instance), its bounds
    brought up to date (:func:`bucket_limits`)."""
    try:
        kv = await js.key_value(bucket.bucket)
    except nats.js.errors.BucketNotFoundError:
        try:
            kv = await js.create_key_value(bucket)
        except nats.js.errors.BadRequestError:
            kv = await js.key_value(bucket.bucket)       # another instance won
    await ensure_limits(js, bucket_limits(bucket, discard))
    return kv


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
