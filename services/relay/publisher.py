"""Publishing to JetStream the cheap way: core NATS messages with a reply subject of
the relay's own, every ack read on one subscription and decoded with msgspec (what
that saves: docs/design/relay.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from ..wire import subjects
from ..wire.pub_ack import PubAck, decode_ack
from ..wire.raw import raw_writer, write_message, wrote
from .errors import BusError
from .outbox import Outgoing

# JetStream's refusals of one message for good (the message, not the stream, is at
# fault): it is set aside as a dead letter. Any other refusal fails the batch (retried).
MESSAGE_TOO_BIG: Final = 10054       # JSStreamMessageExceedsMaximumErr (the stream's max_msg_size)
HEADERS_TOO_BIG: Final = 10097       # JSStreamHeaderExceedsMaximumErr
REFUSED_FOR_GOOD: Final = frozenset({MESSAGE_TOO_BIG, HEADERS_TOO_BIG})


class Acks:
    """The acknowledgements of one batch: ``done`` resolves when the last one is in
    (or with the first error); the highest stream sequences and duplicates are
    counted as they arrive, and the messages JetStream refused for good kept with
    the reason."""

    __slots__ = ("done", "duplicates", "left", "priv_seq", "pub_seq", "refused", "sent")

    def __init__(self, done: asyncio.Future[None], pub_seq: int, priv_seq: int) -> None:
        self.done = done
        self.sent = 0
        self.left = 0
        self.pub_seq = pub_seq
        self.priv_seq = priv_seq
        self.duplicates = 0
        self.refused: list[tuple[Outgoing, str]] = []

    def take(self, ack: PubAck) -> None:
        self.duplicates += ack.duplicate
        if ack.stream == subjects.PUBLIC_STREAM:
            self.pub_seq = max(self.pub_seq, ack.seq)
        else:
            self.priv_seq = max(self.priv_seq, ack.seq)
        self._one_less()

    def refuse(self, message: Outgoing, reason: str) -> None:
        self.refused.append((message, reason))
        self._one_less()

    def _one_less(self) -> None:
        self.left -= 1
        if self.left == 0 and not self.done.done():
            self.done.set_result(None)

    def fail(self, error: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(error)


class Publisher:
    """Publishes to JetStream as core NATS messages whose reply subject is one of its
    own (``<inbox>.<n>``), and reads every ack on one subscription with msgspec.

    It is what ``js.publish_async`` does on the wire (the server acks a message
    published with a reply subject), without its per-message NUID, future, done
    callback and coroutine, nor json and dataclasses per ack: less than half the CPU
    per message. Each message's ``HPUB`` is built in one go and handed to the
    connection's writer (nats-py's ``publish`` checks each subject and header with
    regular expressions and builds the header block piece by piece; the outbox's
    names are checked already), and the flusher woken once per batch. One per
    connection (a session); its acks are lost with it."""

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.prefix = f"{nc.new_inbox()}."
        self._waiting: dict[str, tuple[Acks, Outgoing]] = {}
        self._next = 0
        self._sub: Any = None

    @property
    def max_payload(self) -> int:
        """The most bytes (headers and body) the server takes in one message."""
        return int(self.nc.max_payload)

    async def start(self) -> None:
        self._sub = await self.nc.subscribe(self.prefix + "*", cb=self._on_ack)

    async def send(self, messages: Sequence[Outgoing], skip: set[str], acks: Acks) -> None:
        """Publish ``messages`` (but those whose id is in ``skip``); ``acks`` counts
        their acknowledgements."""
        nc, waiting, prefix = self.nc, self._waiting, self.prefix
        raw = raw_writer(nc)
        if raw is not None and not nc.is_connected:
            raise BusError("publish: not connected to NATS")
        written = size = 0
        for m in messages:
            if m.msg_id in skip:
                continue
            self._next += 1
            token = str(self._next)
            waiting[token] = (acks, m)
            acks.sent += 1
            acks.left += 1
            if await write_message(nc, raw, m.subject, prefix + token, m.headers, m.payload):
                written += 1
                size += len(m.payload)
        if written:
            await wrote(self.nc, written, size)
        if acks.left == 0 and not acks.done.done():
            acks.done.set_result(None)

    def forget(self, acks: Acks) -> None:
        """Stop waiting for the acks of a batch given up."""
        for token in [t for t, (a, _) in self._waiting.items() if a is acks]:
            del self._waiting[token]

    async def _on_ack(self, msg: Any) -> None:
        waiting = self._waiting.pop(msg.subject[len(self.prefix):], None)
        if waiting is None:
            return
        acks, message = waiting
        if msg.headers and msg.headers.get("Status"):
            # e.g. 503: no stream listens on the subject
            acks.fail(BusError(f"publish refused: status {msg.headers.get('Status')} "
                               f"{msg.headers.get('Description', '')}".rstrip()))
            return
        try:
            ack = decode_ack(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            acks.fail(BusError(f"bad publish ack {msg.data[:200]!r}: {error}"))
            return
        if ack.error is not None and ack.error.err_code in REFUSED_FOR_GOOD:
            acks.refuse(message, f"JetStream refused it: {ack.error.err_code} {ack.error.description}")
            return
        if ack.error is not None:
            acks.fail(BusError(f"publish refused: {ack.error.code} {ack.error.err_code} "
                               f"{ack.error.description}"))
            return
        acks.take(ack)
