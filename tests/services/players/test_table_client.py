"""The table client's retry policy against a fake request function: what changed
nothing (``protocol.RETRYABLE``, no responder) is retried, anything else answered."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import msgspec
import nats.errors
import pytest
from studroom.domain.commands import Act
from studroom.domain.errors import DUPLICATE_COMMAND, NOT_YOUR_TURN
from studroom.services.players.client import TableClient
from studroom.services.wire import protocol, subjects


class FakeNats:
    """Answers each request with the next of ``answers`` (reply bytes, or an exception
    to raise); records what was asked."""

    def __init__(self, *answers: bytes | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, bytes]] = []

    async def request(self, subject: str, data: bytes, timeout: float) -> Any:
        self.requests.append((subject, data))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(data=answer)


def send(nc: FakeNats, command: Any = None, retry_for: float = 10.0) -> tuple[protocol.Reply, TableClient]:
    client = TableClient(nc, retry_for=retry_for)
    reply = asyncio.run(client.send("t1", command or Act(seat=3, action="call")))
    return reply, client


@pytest.mark.parametrize("code", sorted(protocol.RETRYABLE))
def test_a_retryable_code_is_retried_until_the_command_is_carried_out(code: str) -> None:
    nc = FakeNats(protocol.error(code, "busy"), protocol.error(code, "busy"), protocol.ok(42))
    reply, client = send(nc)
    assert reply == protocol.Reply(ok=True, version=42)
    assert client.retries == 2 and len(nc.requests) == 3
    assert {subject for subject, _ in nc.requests} == {subjects.command("t1")}
    assert len({data for _, data in nc.requests}) == 1          # the same command each time


def test_a_refusal_that_is_not_retryable_is_answered_at_once() -> None:
    nc = FakeNats(protocol.error(NOT_YOUR_TURN, "seat 2 acts"))
    reply, client = send(nc)
    assert not reply.ok and reply.error is not None and reply.error.code == NOT_YOUR_TURN
    assert client.retries == 0 and len(nc.requests) == 1


def test_no_responder_is_retried() -> None:
    nc = FakeNats(nats.errors.NoRespondersError(), protocol.ok(7))
    reply, client = send(nc)
    assert reply.ok and reply.version == 7 and client.retries == 1


def test_it_gives_up_as_unavailable_after_retry_for() -> None:
    nc = FakeNats(*[protocol.error(protocol.CONFLICT, "again")] * 10)
    reply, client = send(nc, retry_for=0.2)       # pauses 0.05 + 0.1, then 0.2 is too long
    assert reply.error is not None and reply.error.code == protocol.UNAVAILABLE
    assert "conflict" in reply.error.message
    assert client.retries == 2 and len(nc.requests) == 3


def test_a_command_without_an_id_gets_one_kept_across_retries() -> None:
    nc = FakeNats(protocol.error(protocol.UNAVAILABLE, "moving"), protocol.ok(1))
    send(nc, Act(seat=3, action="call"))
    ids = {msgspec.json.decode(data)["command_id"] for _, data in nc.requests}
    assert len(ids) == 1 and None not in ids


def test_a_duplicate_after_a_timeout_means_the_first_attempt_was_carried_out() -> None:
    nc = FakeNats(nats.errors.TimeoutError(), protocol.error(DUPLICATE_COMMAND, "already"))
    reply, _ = send(nc)
    assert reply == protocol.Reply(ok=True)


def test_a_duplicate_without_a_timeout_is_a_refusal() -> None:
    nc = FakeNats(protocol.error(DUPLICATE_COMMAND, "already"))
    reply, _ = send(nc)
    assert reply.error is not None and reply.error.code == DUPLICATE_COMMAND


def test_a_closed_connection_is_unavailable_without_retries() -> None:
    nc = FakeNats(nats.errors.ConnectionClosedError())
    reply, client = send(nc)
    assert reply.error is not None and reply.error.code == protocol.UNAVAILABLE
    assert client.retries == 0


def test_an_undecodable_reply_is_a_bad_reply() -> None:
    reply, _ = send(FakeNats(b"not json"))
    assert reply.error is not None and reply.error.code == protocol.BAD_REPLY
