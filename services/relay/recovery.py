"""The recovery scan: what of the batch that may have been in flight JetStream already
holds, so that a restarted relay publishes only the missing events and copies
(exactly once without relying on the duplicate window: docs/design/relay.md)."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterable
from typing import Any, NamedTuple

from nats.js import api

from studroom.domain.names import is_name

from ..wire import subjects

log = logging.getLogger(__name__)


class Stored(NamedTuple):
    """What a recovery scan found of a store's messages in flight: the ids of its
    private copies, and per table the version its public views reached."""

    ids: set[str]
    versions: dict[str, int]


async def already_stored(js: Any, store: str, tables: Iterable[str], pub_seq: int, priv_seq: int,
                         timeout: float) -> Stored:
    """Store ``store``'s messages about ``tables`` after the sequences ``pub_seq`` and
    ``priv_seq``.  Public messages are judged by version, not by id: a message holds
    the run of a table's events read together, and a batch read again after a restart
    may gather them differently (docs/design/relay.md, "One message per commit")."""
    await _check_stream(js, store, subjects.PUBLIC_STREAM, pub_seq)
    await _check_stream(js, store, subjects.PRIVATE_STREAM, priv_seq)
    names = sorted(t for t in set(tables) if is_name(t))     # (a table that is no name was never published)
    stored = Stored(set(), {})
    if not names:
        return stored
    for msg in await _stored(js, subjects.PUBLIC_STREAM, [subjects.public_events(t) for t in names], pub_seq, timeout):
        headers = msg.headers or {}
        if headers.get("Nats-Msg-Id", "").startswith(store + ":") and subjects.VERSION_HEADER in headers:
            table = subjects.table_of_public(msg.subject)
            stored.versions[table] = max(stored.versions.get(table, 0), int(headers[subjects.VERSION_HEADER]))
    for msg in await _stored(js, subjects.PRIVATE_STREAM, [subjects.table_private_events(t) for t in names],
                             priv_seq, timeout):
        msg_id = (msg.headers or {}).get("Nats-Msg-Id", "")
        if msg_id.startswith(store + ":"):
            stored.ids.add(msg_id)
    return stored


async def _check_stream(js: Any, store: str, stream: str, seq: int) -> None:
    if not seq:
        return
    info = await js.stream_info(stream)
    if info.state.last_seq < seq:
        log.error(
            "relay %s: stream %s ends at %d but this store's messages reached %d: "
            "JetStream lost messages; to publish the store again delete key %r of "
            "bucket %s and the streams' messages",
            store, stream, info.state.last_seq, seq, store, subjects.RELAY_BUCKET,
        )


async def _stored(js: Any, stream: str, filters: list[str], after_seq: int, timeout: float) -> list[Any]:
    """The messages (headers only) on ``filters`` after ``after_seq``: a throwaway
    consumer."""
    name = f"relay_scan_{uuid.uuid4().hex}"
    config = api.ConsumerConfig(
        name=name,
        filter_subjects=filters,
        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=after_seq + 1,
        ack_policy=api.AckPolicy.NONE,
        headers_only=True,
        mem_storage=True,
        num_replicas=1,
        inactive_threshold=30.0,
    )
    info = await js.add_consumer(stream, config=config)
    found: list[Any] = []
    try:
        pending = info.num_pending
        if pending:
            sub = await js.pull_subscribe_bind(consumer=name, stream=stream)
            try:
                while len(found) < pending:
                    found += await sub.fetch(min(pending - len(found), 1000), timeout=timeout)
            finally:
                await sub.unsubscribe()
    finally:
        with contextlib.suppress(Exception):
            await js.delete_consumer(stream, name)
    return found
