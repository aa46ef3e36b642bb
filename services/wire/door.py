"""The door of every responder: who asks, where the answer may go, and how often.

A request's sender is in its subject (his permissions let him publish only there:
docs/design/trust.md), but its reply subject is whatever his client wrote, and NATS
does not check it.  A service answers with ITS powers, so a reply subject of
``$KV.studroom_leases.p.3`` would make it write its own leases.  Every responder (the
table service, the cashier, the lobby, the history, health) therefore asks its
:class:`Door` before it reads a request's body:

- the sender, from the subject (each responder's own ``sender_of``): none, no answer;
- the reply subject must lie under the sender's own inbox,
  ``_INBOX.<role>.<name>.`` (the only one he may read); anything else (another's
  inbox, ``$KV``, ``$JS``, a service subject) gets no answer and is counted, and
  logged once per sender and minute (a request without a reply subject is counted
  apart: the services' start-up probe sends one);
- a token bucket per sender (:data:`QUOTAS`, by role): a request beyond it is
  refused ``rate_limited`` with ``retry_after_ms``, unread; told once, the sender's
  further requests within that wait get no answer at all (``shed``: an honest client
  waits as told, so only a flood meets it, and answering a flood would cost the room a
  message for each of his).

On a server without identities (the open test server, ``bench --auth off``) anybody
may publish anywhere, so no inbox is anybody's: there a reply must only be some
``_INBOX.`` subject.  A service knows which it is on from its own connection's inbox
(:func:`identified`): on a server in operator mode it must be its identity's.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from . import subjects
from .protocol import RATE_LIMITED

log = logging.getLogger("studroom.door")

LOG_EVERY: Final = 60.0          # seconds between two log lines about one sender's misdirected replies
MAX_SENDERS: Final = 100_000     # buckets kept at most (the least recently seen go first)
INBOX: Final = subjects.INBOXES + "."


@dataclass(frozen=True)
class Quota:
    """A token bucket: ``rate`` requests a second on average, ``burst`` at once."""

    rate: float
    burst: int


# Per sender and responder instance, by role; a role not listed is not limited (the
# services: they are the room itself).  Figures and why: docs/design/trust.md, "Quotas".
QUOTAS: Final[Mapping[str, Quota]] = {
    "player": Quota(rate=100, burst=200),
    "spectator": Quota(rate=200, burst=400),     # ONE identity shared by every spectator
    "operator": Quota(rate=500, burst=2000),
}

# The lobby's and the history's: queries an honest client asks now and then (a history
# query is a database read).
QUERY_QUOTAS: Final[Mapping[str, Quota]] = {
    "player": Quota(rate=10, burst=20),
    "spectator": Quota(rate=100, burst=200),
    "operator": Quota(rate=100, burst=500),
}


@dataclass(frozen=True, slots=True)
class Visitor:
    """A request let in: its sender and where to answer; ``retry_after_ms`` > 0: refused,
    beyond the sender's quota."""

    role: str
    name: str
    reply: str
    retry_after_ms: int = 0


@dataclass
class DoorStats:
    admitted: int = 0
    misdirected: int = 0          # no answer: a reply subject not the sender's own inbox
    strangers: int = 0            # no answer: a subject without a sender
    no_reply: int = 0             # no answer: none asked for
    rate_limited: int = 0         # refused ``rate_limited``
    shed: int = 0                 # no answer: beyond the quota again within the wait he was told


def retry_after_ms(wait: float) -> int:
    """A refusal's ``retry_after_ms`` for a wait of ``wait`` seconds (rounded up: asking
    again after it finds a token)."""
    return max(1, int(wait * 1000 + 0.999))


class _Bucket:
    __slots__ = ("at", "tokens", "told_until")

    def __init__(self, tokens: float, at: float) -> None:
        self.tokens = tokens
        self.at = at
        self.told_until = 0.0         # when the wait he was last told ends


class Buckets:
    """One token bucket per key, at most ``max_keys``; a bucket full again (idle long
    enough) is dropped, since it is the same as none."""

    def __init__(self, max_keys: int = MAX_SENDERS) -> None:
        self.max_keys = max_keys
        self._buckets: OrderedDict[Any, _Bucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: Any, quota: Quota, now: float) -> float:
        """Take one token for ``key``: 0.0 if there was one, else the seconds until there is."""
        bucket = self._buckets.pop(key, None)
        if bucket is None:
            bucket = _Bucket(float(quota.burst), now)
        else:
            bucket.tokens = min(float(quota.burst), bucket.tokens + (now - bucket.at) * quota.rate)
            bucket.at = now
        self._buckets[key] = bucket                     # the most recently seen last
        self._evict(quota, now)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / quota.rate

    def tell(self, key: Any, wait: float, now: float) -> bool:
        """Whether ``key``, refused now (just after :meth:`take`), is to be told to wait
        ``wait`` seconds: not while an earlier wait he was told runs."""
        bucket = self._buckets[key]
        if now < bucket.told_until:
            return False
        bucket.told_until = now + wait
        return True

    def _evict(self, quota: Quota, now: float) -> None:
        full_after = quota.burst / quota.rate
        while self._buckets:
            key, oldest = next(iter(self._buckets.items()))
            if len(self._buckets) <= self.max_keys and now - oldest.at < full_after:
                return
            del self._buckets[key]


class Door:
    """One responder's door (see the module docstring).

    ``sender_of(subject) -> (role, name)`` raises ``ValueError`` (``subjects.BadName``)
    for a subject without a sender; ``identities``: whether the server checks who may
    read which inbox (:func:`identified` of the service's connection)."""

    def __init__(self, responder: str, sender_of: Callable[[str], tuple[str, str]], *, identities: bool,
                 quotas: Mapping[str, Quota] = QUOTAS, clock: Callable[[], float] = time.monotonic,
                 max_senders: int = MAX_SENDERS) -> None:
        self.responder = responder
        self.sender_of = sender_of
        self.identities = identities
        self.quotas = quotas
        self.clock = clock
        self.stats = DoorStats()
        self._buckets = {role: Buckets(max_senders) for role in quotas}
        self._said: OrderedDict[tuple[str, str], float] = OrderedDict()    # last log line, by sender

    def admit(self, subject: str, reply: str | None) -> Visitor | None:
        """The request's visitor, or None: no answer at all (counted)."""
        try:
            role, name = self.sender_of(subject)
        except ValueError:
            self.stats.strangers += 1
            return None
        if not reply:                   # nothing to answer (a preflight's probe command)
            self.stats.no_reply += 1
            return None
        if not self._may_answer(role, name, reply):
            self.stats.misdirected += 1
            self._say(role, name, reply)
            return None
        quota = self.quotas.get(role)
        if quota is None:
            self.stats.admitted += 1
            return Visitor(role, name, reply)
        buckets, now = self._buckets[role], self.clock()
        wait = buckets.take(name, quota, now)
        if wait and not buckets.tell(name, wait, now):
            self.stats.shed += 1
            return None
        if wait:
            self.stats.rate_limited += 1
            return Visitor(role, name, reply, retry_after_ms=retry_after_ms(wait))
        self.stats.admitted += 1
        return Visitor(role, name, reply)

    async def enter(self, msg: Any) -> Visitor | None:
        """:meth:`admit` for a NATS message, the refusal of a request beyond its quota
        sent (on the connection it came by): the visitor to serve, or None."""
        visitor = self.admit(msg.subject, msg.reply)
        if visitor is not None and visitor.retry_after_ms:
            try:
                await msg.respond(refusal(visitor.retry_after_ms))
            except Exception:  # noqa: BLE001 (connection closing: the asker times out)
                log.debug("refusal to %s not sent", visitor.reply, exc_info=True)
            return None
        return visitor

    def _may_answer(self, role: str, name: str, reply: str) -> bool:
        if not self.identities:
            return reply.startswith(INBOX)
        return reply.startswith(subjects.inbox_prefix(role, name) + ".")

    def _say(self, role: str, name: str, reply: str | None) -> None:
        now = self.clock()
        while self._said and now - next(iter(self._said.values())) >= LOG_EVERY:
            self._said.popitem(last=False)
        if (role, name) in self._said:
            return
        self._said[role, name] = now
        if len(self._said) > MAX_SENDERS:
            self._said.popitem(last=False)
        log.warning("%s: %s %s asked for an answer on %r, not his own inbox: not answered "
                    "(said once a minute)", self.responder, role, name, (reply or "")[:120])


class _Limited(msgspec.Struct, frozen=True):
    code: str
    message: str
    retry_after_ms: int


class _Refusal(msgspec.Struct, frozen=True):
    ok: bool
    error: _Limited


_encode = msgspec.json.Encoder().encode


def refusal(retry_after_ms: int) -> bytes:
    """``{"ok": false, "error": {"code": "rate_limited", "message": ..., "retry_after_ms": N}}``:
    every responder's replies read it (their ``ErrorBody``)."""
    return _encode(_Refusal(False, _Limited(RATE_LIMITED, f"too many requests: try again in {retry_after_ms} ms",
                                            retry_after_ms)))


def identity_of(nc: Any) -> tuple[str, str] | None:
    """The (role, name) ``nc`` connected as, from its inbox (``_INBOX.<role>.<name>``,
    as ``runtime/processes/process.connect`` sets it from the credentials); None without one."""
    parts = nc.new_inbox().split(".")
    if len(parts) >= 4 and parts[1] in (*subjects.ROLES, "spectator") and subjects.is_name(parts[2]):
        return parts[1], parts[2]
    return None


def identified(nc: Any) -> bool:
    """Whether ``nc`` connected as an identity: then the server is in operator mode and
    checks who reads which inbox."""
    return identity_of(nc) is not None


def door_metrics(doors: Callable[[], list[Door]]) -> Callable[[], list[Any]]:
    """The doors' counters for a process's metrics (runtime/observability/metrics.py), by responder and outcome."""
    from ..runtime.observability.metrics import Metric

    def collect() -> list[Metric]:
        samples: list[tuple[str, Mapping[str, str], float]] = []
        for door in doors():
            for outcome in ("admitted", "misdirected", "strangers", "no_reply", "rate_limited", "shed"):
                samples.append(("_total", {"responder": door.responder, "outcome": outcome},
                                getattr(door.stats, outcome)))
        return [Metric("door_requests", "counter", "requests at the door, by responder and outcome "
                                                   "(misdirected, strangers, no_reply: not answered)", samples)]

    return collect

