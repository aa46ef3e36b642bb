"""JetStream's answer to a message published with a reply subject (its "PubAck"),
decoded with msgspec: what the relay's publisher and the timer's read on their own
ack subscription instead of nats-py's ``js.publish`` (a json parse and a dataclass per
ack: docs/design/relay.md)."""

from __future__ import annotations

import msgspec


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
