"""The recovery scan: which messages of the batch that may have been in flight
JetStream already holds, so that a restarted relay publishes only the missing ones
(exactly once without relying on the duplicate window: docs/design/relay.md)."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from nats.js import api

from ..wire import subjects
from .outbox import Outgoing

log = logging.getLogger(__name__)


async def already_stored(js: Any, store: str, messages: Sequence[Outgoing], pub_seq: int, priv_seq: int,
                         timeout: float) -> set[str]:
    """Nats-Msg-Id of store ``store``'s messages after the sequences ``pub_seq`` and
    ``priv_seq`` on the subjects of the tables ``messages`` are about."""
    await _check_stream(js, store, subjects.PUBLIC_STREAM, pub_seq)
    await _check_stream(js, store, subjects.PRIVATE_STREAM, priv_seq)
    present: set[str] = set()
    for stream, filters in scan_filters(messages).items():
        after_seq = pub_seq if stream == subjects.PUBLIC_STREAM else priv_seq
        present |= await _stored_ids(js, store, stream, filters, after_seq, timeout)
    return present


def scan_filters(messages: Sequence[Outgoing]) -> dict[str, list[str]]:
    """Per stream, the subjects to scan: those of the tables the messages are about."""
    tables: dict[str, set[str]] = {}
    for m in messages:
        tables.setdefault(m.stream, set()).add(m.table)
    return {
        stream: [
            subjects.public_events(t) if stream == subjects.PUBLIC_STREAM else subjects.table_private_events(t)
            for t in sorted(names)
        ]
        for stream, names in tables.items()
    }


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


async def _stored_ids(js: Any, store: str, stream: str, filters: list[str], after_seq: int,
                      timeout: float) -> set[str]:
    """Nats-Msg-Id of this store's messages on ``filters`` after ``after_seq``: a
    throwaway consumer, headers only."""
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
    ids: set[str] = set()
    try:
        pending = info.num_pending
        if pending:
            sub = await js.pull_subscribe_bind(consumer=name, stream=stream)
            try:
                got = 0
                while got < pending:
                    msgs = await sub.fetch(min(pending - got, 1000), timeout=timeout)
                    got += len(msgs)
                    for msg in msgs:
                        msg_id = (msg.headers or {}).get("Nats-Msg-Id", "")
                        if msg_id.startswith(store + ":"):
                            ids.add(msg_id)
            finally:
                await sub.unsubscribe()
    finally:
        with contextlib.suppress(Exception):
            await js.delete_consumer(stream, name)
    return ids
