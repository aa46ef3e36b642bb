"""The responders' door without servers: answers only to the sender's own inbox, a
token bucket per sender, bounded memory, one log line per sender and minute."""

from __future__ import annotations

import logging

import pytest
from studroom.projections.history.protocol import decode_reply as decode_history
from studroom.projections.lobby.queries import decode_answer
from studroom.services.wire.cashier_protocol import decode_reply as decode_cashier
from studroom.services.wire import protocol, subjects
from studroom.services.wire.door import Buckets, Door, Quota, identity_of, refusal


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def door(identities: bool = True, clock: Clock | None = None, **quotas: Quota) -> Door:
    return Door("cashier", subjects.cashier_sender, identities=identities,
                quotas=quotas or {"player": Quota(rate=10, burst=3)}, clock=clock or Clock())


MAL = subjects.cashier_requests("player", "mal")


@pytest.mark.parametrize("reply", [
    "$KV.studroom_leases.p.3", "$KV.studroom_lobby.t1", "$JS.API.STREAM.DELETE.STUDROOM_PUBLIC",
    "_INBOX.player.bob.x1", "_INBOX.player.malory.1", "_INBOX.player.mal", "_INBOX.operator.mal.1",
    "studroom.relay.nudge.studroom_p0", "studroom.pcmd.3.t1.player.mal",
])
def test_no_answer_but_on_the_senders_own_inbox(reply: str | None) -> None:
    d = door()
    assert d.admit(MAL, reply) is None
    assert d.stats.misdirected == 1 and d.stats.admitted == 0


def test_a_request_without_a_reply_subject_is_not_answered() -> None:
    d = door()
    assert d.admit(MAL, None) is None and d.admit(MAL, "") is None
    assert d.stats.no_reply == 2 and d.stats.misdirected == 0


def test_the_senders_own_inbox_is_answered() -> None:
    d = door()
    visitor = d.admit(MAL, "_INBOX.player.mal.Xy12.7")
    assert visitor is not None and (visitor.role, visitor.name, visitor.retry_after_ms) == ("player", "mal", 0)
    assert d.stats.admitted == 1


def test_a_subject_without_a_sender_is_not_answered() -> None:
    d = door()
    assert d.admit("studroom.cashier.player", "_INBOX.player.mal.1") is None
    assert d.admit("studroom.cashier.service.table", "_INBOX.service.table.1") is None
    assert d.stats.strangers == 2


def test_without_identities_any_inbox_but_nothing_else() -> None:
    d = door(identities=False)
    assert d.admit(MAL, "_INBOX.Xy12.7") is not None
    assert d.admit(MAL, "$KV.studroom_leases.p.3") is None
    assert d.admit(MAL, "studroom.pub.t1") is None


def test_a_token_bucket_per_sender() -> None:
    clock = Clock()
    d = door(clock=clock)
    mine = "_INBOX.player.mal.1"
    assert all(d.admit(MAL, mine).retry_after_ms == 0 for _ in range(3))      # the burst
    refused = d.admit(MAL, mine)
    assert refused is not None and refused.retry_after_ms == 100              # 1 token at 10/s
    assert d.stats.rate_limited == 1
    bob = d.admit(subjects.cashier_requests("player", "bob"), "_INBOX.player.bob.1")
    assert bob is not None and bob.retry_after_ms == 0                        # his own bucket
    clock.now += 0.1
    assert d.admit(MAL, mine).retry_after_ms == 0
    assert d.admit(MAL, mine).retry_after_ms > 0


def test_a_sender_told_to_wait_gets_no_second_answer_within_the_wait() -> None:
    clock = Clock()
    d = door(clock=clock)
    mine = "_INBOX.player.mal.1"
    for _ in range(3):                                                        # the burst
        d.admit(MAL, mine)
    assert d.admit(MAL, mine).retry_after_ms == 100                           # told: 100 ms
    clock.now += 0.05
    assert [d.admit(MAL, mine) for _ in range(50)] == [None] * 50             # a flood: no answers
    assert (d.stats.rate_limited, d.stats.shed) == (1, 50)
    clock.now += 0.06                                                         # the wait is over
    assert d.admit(MAL, mine).retry_after_ms == 0                             # a token again
    assert d.admit(MAL, mine).retry_after_ms > 0                              # told once more


def test_a_role_without_a_quota_is_not_limited() -> None:
    d = door()      # operators: no quota in this door
    floor = subjects.cashier_requests("operator", "floor")
    assert all(d.admit(floor, "_INBOX.operator.floor.1").retry_after_ms == 0 for _ in range(1000))


def test_buckets_are_bounded_and_idle_ones_go() -> None:
    quota = Quota(rate=10, burst=5)
    buckets = Buckets(max_keys=100)
    for i in range(1000):
        buckets.take(i, quota, 0.0)
    assert len(buckets) == 100
    buckets.take("late", quota, 0.6)                 # 0.5 s refills 5 tokens: the others are as new
    assert len(buckets) == 1


def test_misdirected_replies_are_logged_once_per_sender_and_minute(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    d = door(clock=clock)
    with caplog.at_level(logging.WARNING, "studroom.door"):
        for _ in range(50):
            d.admit(MAL, "$KV.studroom_leases.p.3")
        d.admit(subjects.cashier_requests("player", "eve"), "$KV.x")
        clock.now += 61
        d.admit(MAL, "$KV.studroom_leases.p.3")
    assert len(caplog.records) == 3 and d.stats.misdirected == 52


def test_every_responders_reply_reads_the_refusal() -> None:
    data = refusal(250)
    for reply in (protocol.decode_reply(data), decode_cashier(data), decode_history(data), decode_answer(data)):
        assert not reply.ok and reply.error is not None
        assert (reply.error.code, reply.error.retry_after_ms) == (protocol.RATE_LIMITED, 250)
    assert protocol.RATE_LIMITED in protocol.RETRYABLE


class _Conn:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def new_inbox(self) -> str:
        return f"{self.prefix}.AbC123"


def test_the_identity_of_a_connection_is_its_inbox() -> None:
    assert identity_of(_Conn("_INBOX.player.mal")) == ("player", "mal")
    assert identity_of(_Conn("_INBOX.spectator.public")) == ("spectator", "public")
    assert identity_of(_Conn("_INBOX")) is None


def test_the_subjects_of_the_lobby_and_health_carry_the_sender() -> None:
    assert subjects.lobby_asker(subjects.lobby_query("spectator", "public")) == ("spectator", "public")
    assert subjects.health_sender(subjects.health("table", "operator", "floor")) == ("operator", "floor")
    with pytest.raises(subjects.BadName):
        subjects.health("table", "player", "mal")
    with pytest.raises(subjects.BadName):
        subjects.lobby_asker("studroom.lobby.query")
