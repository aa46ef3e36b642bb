"""The clients' one request-with-retry loop against a fake request function: what is
retried (no responder, ``protocol.RETRYABLE``, a NATS error), how long (``retry_for``,
pauses of the room's policy, ``rate_limited`` as told), what is answered at once, and
when a duplicate means an earlier attempt was carried out."""

from __future__ import annotations

import asyncio
import random
import time

import msgspec
import nats.errors
import pytest
from studroom.domain.errors import DUPLICATE_COMMAND, DUPLICATE_REFERENCE
from studroom.services.client.cashier import CashierClient
from studroom.services.client.requests import Requests
from studroom.services.runtime.retry import Backoff
from studroom.services.wire import protocol, subjects
from studroom.services.wire.cashier_protocol import CashierReply, Deposit, refusal
from studroom.services.wire.protocol import ErrorBody, Reply
from request_fakes import FakeNats


class Longest(random.Random):
    """Jitter that always draws the longest pause: the pauses are exactly the ceilings."""

    def uniform(self, a: float, b: float) -> float:
        return b


def _carried_out(reply: Reply) -> Reply | None:
    return Reply(ok=True) if reply.error is not None and reply.error.code == DUPLICATE_COMMAND else None


def requests(nc: FakeNats, retry_for: float = 10.0, backoff: Backoff = Backoff(first=0.001, longest=0.004)
             ) -> Requests[Reply]:
    return Requests(nc, retry_for=retry_for, decode=protocol.decode_reply, refusal=protocol.refusal,
                    carried_out=_carried_out, backoff=backoff, rng=Longest())


def ask(loop: Requests[Reply]) -> Reply:
    return asyncio.run(loop.request("studroom.somewhere", b"{}", timeout=1.0))


def rate_limited(after_ms: int) -> bytes:
    return msgspec.json.encode(Reply(ok=False, error=ErrorBody(protocol.RATE_LIMITED, "slow down", after_ms)))


@pytest.mark.parametrize("failure", [nats.errors.NoRespondersError(), nats.errors.TimeoutError(),
                                     nats.errors.OutboundBufferLimitError(),
                                     *(protocol.error(code, "busy") for code in sorted(protocol.RETRYABLE))],
                         ids=repr)
def test_what_changed_nothing_is_asked_again_with_the_same_body(failure: bytes | Exception) -> None:
    nc = FakeNats(failure, failure, protocol.ok(42))
    loop = requests(nc)
    assert ask(loop) == Reply(ok=True, version=42)
    assert loop.retries == 2 and len(set(nc.requests)) == 1 and len(nc.requests) == 3


def test_it_gives_up_as_unavailable_when_the_next_pause_would_end_past_retry_for() -> None:
    nc = FakeNats(*[protocol.error(protocol.CONFLICT, "again")] * 10)
    loop = requests(nc, retry_for=0.2, backoff=Backoff(first=0.05, longest=1.0))
    reply = ask(loop)                      # pauses 0.05 + 0.1, then 0.2 would end at 0.35
    assert reply.error is not None and reply.error.code == protocol.UNAVAILABLE
    assert "gave up after 0.2s: conflict: again" in reply.error.message
    assert loop.retries == 2 and len(nc.requests) == 3


def test_no_retry_for_asks_once() -> None:
    loop = requests(FakeNats(nats.errors.NoRespondersError()), retry_for=0.0)
    reply = ask(loop)
    assert reply.error is not None and reply.error.code == protocol.UNAVAILABLE
    assert "no responder on studroom.somewhere" in reply.error.message and loop.retries == 0


def test_rate_limited_waits_at_least_as_long_as_it_was_told() -> None:
    nc = FakeNats(rate_limited(200), protocol.ok(1))
    started = time.monotonic()
    assert ask(requests(nc)).ok
    assert time.monotonic() - started >= 0.19     # told 200 ms; the policy's own pause is 1 ms


def test_rate_limited_beyond_retry_for_gives_up_at_once() -> None:
    reply = ask(requests(FakeNats(rate_limited(60_000)), retry_for=1.0))
    assert reply.error is not None and reply.error.code == protocol.UNAVAILABLE


@pytest.mark.parametrize("answer", [protocol.error("not_your_turn", "no"), protocol.ok(3)])
def test_a_final_reply_is_answered_at_once(answer: bytes) -> None:
    loop = requests(FakeNats(answer))
    assert ask(loop) == protocol.decode_reply(answer) and loop.retries == 0


def test_a_closed_connection_is_unavailable_without_retries() -> None:
    loop = requests(FakeNats(nats.errors.ConnectionClosedError()))
    reply = ask(loop)
    assert reply.error is not None and reply.error.code == protocol.UNAVAILABLE and loop.retries == 0


def test_an_undecodable_reply_is_a_bad_reply() -> None:
    reply = ask(requests(FakeNats(b"not json")))
    assert reply.error is not None and reply.error.code == protocol.BAD_REPLY


@pytest.mark.parametrize("lost", [nats.errors.TimeoutError(), nats.errors.OutboundBufferLimitError()], ids=repr)
def test_a_duplicate_after_a_lost_reply_means_the_first_attempt_was_carried_out(lost: Exception) -> None:
    assert ask(requests(FakeNats(lost, protocol.error(DUPLICATE_COMMAND, "already")))) == Reply(ok=True)


def test_a_duplicate_after_no_responder_is_a_refusal() -> None:
    """No responder: the first attempt reached nobody, so a duplicate is someone else's id."""
    reply = ask(requests(FakeNats(nats.errors.NoRespondersError(), protocol.error(DUPLICATE_COMMAND, "already"))))
    assert reply.error is not None and reply.error.code == DUPLICATE_COMMAND


# The cashier client on the same loop: what its duplicates mean.

CASHIER_OK = msgspec.json.encode(CashierReply(ok=True, player="alice"))


def cashier_refusal(code: str) -> bytes:
    return msgspec.json.encode(refusal(code, "seen"))


def deposit(*answers: bytes | Exception) -> tuple[CashierReply, FakeNats]:
    nc = FakeNats(*answers)
    client = CashierClient(nc, "operator", "floor")
    return asyncio.run(client.request(Deposit(player="alice", amount=500, reference="wire-1"))), nc


def test_the_cashier_client_asks_on_its_own_subject() -> None:
    reply, nc = deposit(protocol.error(protocol.UNAVAILABLE, "starting"), CASHIER_OK)
    assert reply.ok and [s for s, _ in nc.requests] == [subjects.cashier_requests("operator", "floor")] * 2


def test_a_deposit_refused_as_a_duplicate_reference_after_a_timeout_was_done() -> None:
    reply, _ = deposit(nats.errors.TimeoutError(), cashier_refusal(DUPLICATE_REFERENCE))
    assert reply == CashierReply(ok=True)


def test_a_buy_in_refused_as_a_duplicate_after_a_timeout_is_pending() -> None:
    reply, _ = deposit(nats.errors.TimeoutError(), cashier_refusal(DUPLICATE_COMMAND))
    assert reply.error is not None and reply.error.code == protocol.PENDING


def test_a_duplicate_reference_on_the_first_attempt_is_a_refusal() -> None:
    reply, _ = deposit(cashier_refusal(DUPLICATE_REFERENCE))
    assert reply.error is not None and reply.error.code == DUPLICATE_REFERENCE
