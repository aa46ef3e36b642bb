"""The publisher without a server: what it puts on the wire, and how it reads
JetStream's acks (stored, duplicate, refused, garbled)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import pytest
from studroom.services.relay.errors import BusError
from studroom.services.relay.outbox import Outgoing
from studroom.services.relay.publisher import Acks, Publisher
from studroom.services.wire import subjects
from studroom.services.wire.pub_ack import PubAck, decode_ack

INBOX = "_INBOX.relay"


class Msg(NamedTuple):
    subject: str
    data: bytes
    headers: dict[str, str] | None = None


class FakeConnection:
    """The little of a nats-py client the publisher uses."""

    max_payload = 64 * 1024

    def __init__(self) -> None:
        self.published: list[tuple[str, bytes, str, dict[str, str]]] = []
        self.subscribed: dict[str, Callable[[Any], Awaitable[None]]] = {}

    def new_inbox(self) -> str:
        return INBOX

    async def subscribe(self, subject: str, cb: Callable[[Any], Awaitable[None]]) -> object:
        self.subscribed[subject] = cb
        return object()

    async def publish(self, subject: str, payload: bytes, reply: str, headers: dict[str, str]) -> None:
        self.published.append((subject, payload, reply, headers))


def _message(msg_id: str, stream: str = subjects.PUBLIC_STREAM) -> Outgoing:
    subject = subjects.public_events("t") if stream == subjects.PUBLIC_STREAM else subjects.private_events("p", "t")
    return Outgoing(stream, subject, msg_id, {"Nats-Msg-Id": msg_id}, msg_id.encode(), "t")


def _run(scenario: Callable[[FakeConnection, Publisher], Awaitable[None]]) -> None:
    async def main() -> None:
        nc = FakeConnection()
        publisher = Publisher(nc)
        await publisher.start()
        assert list(nc.subscribed) == [f"{INBOX}.*"]
        await scenario(nc, publisher)

    asyncio.run(main())


def _acks(pub_seq: int = 0, priv_seq: int = 0) -> Acks:
    return Acks(asyncio.get_running_loop().create_future(), pub_seq, priv_seq)


async def _ack(nc: FakeConnection, reply: str, data: bytes, headers: dict[str, str] | None = None) -> None:
    await nc.subscribed[f"{INBOX}.*"](Msg(reply, data, headers))


# ------------------------------------------------------------------ decoding acks


def test_an_ack_decodes_to_its_stream_sequence_and_duplicate_flag() -> None:
    ack = decode_ack(b'{"stream":"STUDROOM_PUBLIC","domain":"hub","seq":42,"duplicate":true}')
    assert ack == PubAck(stream="STUDROOM_PUBLIC", seq=42, duplicate=True)
    assert decode_ack(b'{"stream":"STUDROOM_PRIVATE","seq":7}').duplicate is False


def test_a_refusal_decodes_to_its_error() -> None:
    ack = decode_ack(b'{"error":{"code":400,"err_code":10060,"description":"expected stream does not match"}}')
    assert ack.error is not None
    assert (ack.error.code, ack.error.err_code, ack.error.description) == (400, 10060, "expected stream does not match")


# ------------------------------------------------------------------ publishing


def test_messages_go_out_with_a_reply_subject_each_but_those_to_skip() -> None:
    async def scenario(nc: FakeConnection, publisher: Publisher) -> None:
        acks = _acks()
        messages = [_message("s:1"), _message("s:2"), _message("s:2:0", subjects.PRIVATE_STREAM)]
        await publisher.send(messages, {"s:2"}, acks)
        assert nc.published == [
            (m.subject, m.payload, f"{INBOX}.{n}", m.headers) for n, m in ((1, messages[0]), (2, messages[2]))
        ]
        assert (acks.sent, acks.left, acks.done.done()) == (2, 2, False)

    _run(scenario)


def test_a_batch_with_nothing_to_send_is_done_at_once() -> None:
    async def scenario(nc: FakeConnection, publisher: Publisher) -> None:
        acks = _acks()
        await publisher.send([_message("s:1")], {"s:1"}, acks)
        assert nc.published == []
        assert acks.done.done() and acks.sent == 0

    _run(scenario)


def test_acks_count_up_the_highest_sequence_per_stream_and_the_duplicates() -> None:
    async def scenario(nc: FakeConnection, publisher: Publisher) -> None:
        acks = _acks(pub_seq=10, priv_seq=3)
        await publisher.send([_message("s:1"), _message("s:2"), _message("s:2:1", subjects.PRIVATE_STREAM)],
                             set(), acks)
        replies = [reply for _, _, reply, _ in nc.published]
        await _ack(nc, replies[1], b'{"stream":"STUDROOM_PUBLIC","seq":12}')
        await _ack(nc, replies[2], b'{"stream":"STUDROOM_PRIVATE","seq":4,"duplicate":true}')
        assert not acks.done.done()
        await _ack(nc, replies[0], b'{"stream":"STUDROOM_PUBLIC","seq":11}')
        assert acks.done.done() and acks.done.result() is None
        assert (acks.pub_seq, acks.priv_seq, acks.duplicates, acks.left) == (12, 4, 1, 0)

    _run(scenario)


def test_a_message_jetstream_refuses_for_good_is_kept_with_its_reason_and_the_batch_goes_on() -> None:
    async def scenario(nc: FakeConnection, publisher: Publisher) -> None:
        acks = _acks()
        messages = [_message("s:1"), _message("s:2"), _message("s:3")]
        await publisher.send(messages, set(), acks)
        replies = [reply for _, _, reply, _ in nc.published]
        await _ack(nc, replies[0], b'{"stream":"STUDROOM_PUBLIC","seq":1}')
        await _ack(nc, replies[1], b'{"error":{"code":400,"err_code":10054,'
                                   b'"description":"message size exceeds maximum allowed"}}')
        await _ack(nc, replies[2], b'{"stream":"STUDROOM_PUBLIC","seq":2}')
        assert acks.done.done() and acks.done.result() is None
        assert acks.refused == [(messages[1], "JetStream refused it: 10054 message size exceeds maximum allowed")]
        assert (acks.sent, acks.pub_seq) == (3, 2)

    _run(scenario)


def test_the_publisher_knows_the_server_max_payload() -> None:
    async def scenario(nc: FakeConnection, publisher: Publisher) -> None:
        assert publisher.max_payload == nc.max_payload

    _run(scenario)


@pytest.mark.parametrize(("data", "headers", "error"), [
    (b"", {"Status": "503", "Description": "No Responders"}, "publish refused: status 503 No Responders"),
    (b'{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}', None,
     "publish refused: 503 10077 maximum messages exceeded"),
    (b"not json", None, "bad publish ack b'not json'"),
    (b'{"seq":"one"}', None, "bad publish ack"),
])
def test_a_refused_or_garbled_ack_fails_the_batch(data: bytes, headers: dict[str, str] | None, error: str) -> None:
    async def scenario(nc: FakeConnection, publisher: Publisher) -> None:
        acks = _acks()
        await publisher.send([_message("s:1"), _message("s:2")], set(), acks)
        await _ack(nc, nc.published[0][2], data, headers)
        with pytest.raises(BusError, match="^" + re.escape(error)):
            acks.done.result()
        await _ack(nc, nc.published[1][2], b'{"stream":"STUDROOM_PUBLIC","seq":1}')   # late: no effect
        assert acks.done.done()

    _run(scenario)


def test_acks_of_a_forgotten_batch_and_strangers_are_ignored() -> None:
    async def scenario(nc: FakeConnection, publisher: Publisher) -> None:
        given_up, next_batch = _acks(), _acks()
        await publisher.send([_message("s:1"), _message("s:2")], set(), given_up)
        await publisher.send([_message("s:1")], set(), next_batch)
        publisher.forget(given_up)
        for _, _, reply, _ in nc.published[:2]:
            await _ack(nc, reply, b'{"stream":"STUDROOM_PUBLIC","seq":1}')
        await _ack(nc, f"{INBOX}.999", b'{"stream":"STUDROOM_PUBLIC","seq":1}')
        assert given_up.left == 2 and not given_up.done.done()
        assert not next_batch.done.done()
        await _ack(nc, nc.published[2][2], b'{"stream":"STUDROOM_PUBLIC","seq":2}')
        assert next_batch.done.done() and next_batch.pub_seq == 2

    _run(scenario)
