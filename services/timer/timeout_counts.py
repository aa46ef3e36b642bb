"""The lobby's view of timeouts: one record per table in KV bucket ``studroom_timeouts``.

Key = table id; value = JSON ``{"timeouts": <total>, "last_ms": <when the last one was
relayed>, "recent": [{"turn", "seat", "outcome", "ms"}, ... the last 20]}``, updated
with compare-and-set from the ``TimedOut`` events of the public stream.  A redelivered
event is recognised by its turn and not counted twice.  A lobby projection watches the
bucket (e.g. "tables whose players keep timing out").  A separate concept from the
timers themselves: it is here until the lobby projection takes it over.
"""

from __future__ import annotations

import json
from typing import Any

import nats.js.errors

RECENT_TIMEOUTS = 20          # entries kept per table in the record
ATTEMPTS = 20                 # compare-and-set rounds lost to other instances before giving up


def add_timeout(record: dict[str, Any], turn: int, seat: int | None, outcome: str | None,
                ms: int) -> dict[str, Any] | None:
    """``record`` with the timeout of ``turn`` counted, or None if it holds that turn
    already (or the turn is older than every recent entry of a full record)."""
    recent = list(record.get("recent", []))
    turns = {r.get("turn") for r in recent}
    if turn in turns or (len(recent) >= RECENT_TIMEOUTS and turn < min(turns)):
        return None
    recent.append({"turn": turn, "seat": seat, "outcome": outcome, "ms": ms})
    recent.sort(key=lambda r: r["turn"])
    return {
        "timeouts": int(record.get("timeouts", 0)) + 1,
        "last_ms": max(ms, int(record.get("last_ms", 0))),
        "recent": recent[-RECENT_TIMEOUTS:],
    }


async def count_timeout(kv: Any, table_id: str, turn: int, seat: int | None, outcome: str | None,
                        ms: int) -> bool:
    """Add a timeout to ``table_id``'s record in ``kv``; False when it was counted before."""
    for _ in range(ATTEMPTS):
        try:
            entry = await kv.get(table_id)
            record = json.loads(entry.value or b"{}")
            revision = entry.revision
        except nats.js.errors.KeyNotFoundError:
            record, revision = {}, None
        updated = add_timeout(record, turn, seat, outcome, ms)
        if updated is None:
            return False
        data = json.dumps(updated, separators=(",", ":")).encode()
        try:
            if revision is None:
                await kv.create(table_id, data)
            else:
                await kv.update(table_id, data, last=revision)
        except (nats.js.errors.KeyWrongLastSequenceError, nats.js.errors.BadRequestError):
            continue                                 # another instance wrote: again
        return True
    return False
