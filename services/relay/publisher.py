"""Publishing to JetStream the cheap way: core NATS messages with a reply subject of
the relay's own, every ack read on one subscription and decoded with msgspec (what
that saves: docs/design/relay.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import msgspec
from ..wire import subjects
from .errors import BusError
from .outbox import Outgoing


class AckError(msgspec.Struct):
    code: int = 0
    err_code: int = 0
    description: str = ""


class PubAck(msgspec.Struct):
    """JetStream's answer to a published message: where it was stored, or why not."""

    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    error: AckError | None = None


decode_ack = msgspec.json.Decoder(PubAck).decode


class Acks:
    """The acknowledgements of one batch: ``done`` resolves when the last one is in
    (or with the first error); the highest stream sequences and duplicates are
    counted as they arrive."""

    __slots__ = ("done", "duplicates", "left", "priv_seq", "pub_seq", "sent")

    def __init__(self, done: asyncio.Future[None], pub_seq: int, priv_seq: int) -> None:
        self.done = done
        self.sent = 0
        self.left = 0
        self.pub_seq = pub_seq
        self.priv_seq = priv_seq
        self.duplicates = 0

    def take(self, ack: PubAck) -> None:
        self.duplicates += ack.duplicate
        if ack.stream == subjects.PUBLIC_STREAM:
            self.pub_seq = max(self.pub_seq, ack.seq)
        else:
            self.priv_seq = max(self.priv_seq, ack.seq)
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
    per message. One per connection (a session); its acks are lost with it."""

    def __init__(self, nc: Any) -> None:
        self.nc = nc
        self.prefix = f"{nc.new_inbox()}."
        self._waiting: dict[str, Acks] = {}
        self._next = 0
        self._sub: Any = None

    async def start(self) -> None:
        self._sub = await self.nc.subscribe(self.prefix + "*", cb=self._on_ack)

    async def send(self, messages: Sequence[Outgoing], skip: set[str], acks: Acks) -> None:
        """Publish ``messages`` (but those whose id is in ``skip``); ``acks`` counts
        their acknowledgements."""
        publish, waiting, prefix = self.nc.publish, self._waiting, self.prefix
        for m in messages:
            if m.msg_id in skip:
                continue
            self._next += 1
            token = str(self._next)
            waiting[token] = acks
            acks.sent += 1
            acks.left += 1
            await publish(m.subject, m.payload, reply=prefix + token, headers=m.headers)
        if acks.left == 0 and not acks.done.done():
            acks.done.set_result(None)

    def forget(self, acks: Acks) -> None:
        """Stop waiting for the acks of a batch given up."""
        for token in [t for t, a in self._waiting.items() if a is acks]:
            del self._waiting[token]

    async def _on_ack(self, msg: Any) -> None:
        acks = self._waiting.pop(msg.subject[len(self.prefix):], None)
        if acks is None:
            return
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
        if ack.error is not None:
            acks.fail(BusError(f"publish refused: {ack.error.code} {ack.error.err_code} "
                               f"{ack.error.description}"))
            return
        acks.take(ack)
