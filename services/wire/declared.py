"""Declared infrastructure: the streams, consumers and KV buckets a service needs are
written in its code and created, or brought up to date, at every start (no manual
``nats stream add`` / ``nats kv add``).  Idempotent: declaring twice changes nothing,
and any number of instances may declare at once.  docs/design/operations-checks.md.
"""

from __future__ import annotations

import logging
from typing import Any

import nats.js.errors
from nats.js.api import ConsumerConfig, KeyValueConfig, StreamConfig

log = logging.getLogger("studroom.declared")

# What a declaration keeps up to date on an existing stream (its limits and switches);
# a field the declaration leaves unset (None, 0, False: the server's default) is the
# operator's.  Storage and retention cannot
# change on a live stream: a difference there is logged, not fixed.
UPDATED_FIELDS = ("max_age", "max_bytes", "duplicate_window", "allow_direct", "allow_msg_schedules")
FIXED_FIELDS = ("storage", "retention")

CREATED, UPDATED, UNCHANGED = "created", "updated", "unchanged"


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
        if not want:
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
    have = info.config
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


async def ensure_bucket(js: Any, bucket: KeyValueConfig) -> Any:
    """The KV bucket, created if missing (by this or another instance)."""
    try:
        return await js.key_value(bucket.bucket)
    except nats.js.errors.BucketNotFoundError:
        pass
    try:
        return await js.create_key_value(bucket)
    except nats.js.errors.BadRequestError:
        return await js.key_value(bucket.bucket)       # another instance won
