"""The operator's desk: the services' health and the dead letters (the books' parts,
rake and reconcile, are in desk_books.py; a hand's replay in replay.py).

Who asks what (docs/design/trust.md):

- :func:`health` asks over the operator's OWN connection: an operator may publish
  ``$SRV.>`` (NATS micro discovery), so the server's permissions apply as they do to
  ``studroom health``, whose reading of the answers this shares (services/client/discovery.py).
- :func:`dead_letters` reads KV bucket ``studroom_dead_letters``, which no operator may
  read (JetStream is the services' alone): over the console's own service connection,
  one with JetStream read powers (e.g. the read-only ``projections`` identity).  It
  never creates the bucket, and reads at most ``limit`` records, newest first.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from ..client.discovery import ask_all, instance, key_counters, readiness, started_at
from ..relay.dead_letters import DeadLetter
from ..wire import subjects
from ..wire.dead_letters import Undelivered
from ..wire.subjects import DEAD_LETTER_BUCKET
from ..client.table import Refused
from .desk_books import Books, Reconciles, rake

__all__ = ["Books", "Reconciles", "Refused", "dead_letters", "health", "rake"]

LAG_GAUGES: Final = ("projection_lag_events", "relay_backlog_events")
MOST_LETTERS: Final = 200
BODY_SHOWN: Final = 500          # characters of a set-aside message's body the desk shows


def _service(stats: dict[str, Any], now: datetime) -> dict[str, Any]:
    """One instance's ``$SRV.STATS`` answer as the desk charts it."""
    service, instance_id = instance(stats).split(" ", 1)
    counters = key_counters(stats)
    try:
        up: float | None = round((now - started_at(stats)).total_seconds(), 1)
    except (KeyError, ValueError):
        up = None
    return {
        "service": service,
        "instance": instance_id,
        "version": stats.get("version"),
        "up_seconds": up,
        "ready": readiness(stats),
        "counters": {k: v for k, v in counters.items() if not k.startswith(LAG_GAUGES)},
        "lag": {k: v for k, v in counters.items() if k.startswith(LAG_GAUGES)},
    }


async def health(nc: Any, wait: float = 1.0) -> dict[str, Any]:
    """Every running service instance that answered ``$SRV.STATS`` within ``wait`` s:
    ``{"at_ms", "services": [{"service", "instance", "version", "up_seconds", "ready"
    ("ready" | "not ready" | "?"), "counters": {name: number}, "lag": {name: events}}]}``
    sorted by service and instance; ``lag`` holds ``projection_lag_events.<projection>``
    and ``relay_backlog_events.<store>`` (the charts' series)."""
    answers = await ask_all(nc, subjects.DISCOVERY_STATS, wait)
    now = datetime.now(UTC)
    services = sorted((_service(stats, now) for stats in answers if isinstance(stats, dict) and "name" in stats),
                      key=lambda s: (s["service"], s["instance"]))
    return {"at_ms": int(now.timestamp() * 1000), "services": services}


_KINDS: Final = (("unpublished", DeadLetter), ("undelivered", Undelivered))


def _letter(key: str, data: bytes, at: datetime | None) -> dict[str, Any]:
    """One record as the desk shows it; a value that is no record is shown as such."""
    for kind, struct in _KINDS:
        try:
            letter: Any = msgspec.json.decode(data, type=struct)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        body = getattr(letter, "body", None)
        return {"key": key, "kind": kind, "at_ms": None if at is None else int(at.timestamp() * 1000),
                "subject": getattr(letter, "subject", None), "reason": letter.reason, "what": letter.describe(),
                "body": None if body is None else body[:BODY_SHOWN]}
    return {"key": key, "kind": "unknown", "at_ms": None if at is None else int(at.timestamp() * 1000),
            "subject": None, "reason": "not a dead-letter record", "what": f"{len(data)} bytes", "body": None}


async def dead_letters(nc: Any, limit: int = 50) -> dict[str, Any]:
    """The newest ``limit`` (1..200) records of the dead-letter bucket: ``{"count": records
    held, "letters": [{"key", "kind" ("unpublished": the relay's, "undelivered": a
    consumer's), "at_ms", "subject", "reason", "what", "body"}]}``, newest first."""
    import nats.js.errors

    if type(limit) is not int or not 1 <= limit <= MOST_LETTERS:
        raise Refused("bad_request", f"limit is 1..{MOST_LETTERS}")
    js = nc.jetstream()
    stream = subjects.bucket_stream(DEAD_LETTER_BUCKET)
    try:
        info = await js.stream_info(stream)
    except nats.js.errors.NotFoundError:
        return {"count": 0, "letters": []}         # nothing was ever set aside
    letters: list[dict[str, Any]] = []
    seq, first, looked = info.state.last_seq, info.state.first_seq, 0
    while seq >= max(first, 1) and len(letters) < limit and looked < 2 * limit:
        looked += 1
        try:
            msg = await js.get_msg(stream, seq)
        except nats.js.errors.NotFoundError:        # deleted, expired or superseded
            seq -= 1
            continue
        seq -= 1
        operation = (msg.headers or {}).get("KV-Operation")
        if operation in ("DEL", "PURGE") or not msg.data or not msg.subject:
            continue
        letters.append(_letter(msg.subject.split(".", 2)[-1], msg.data, msg.time))
    return {"count": info.state.messages, "letters": letters}
