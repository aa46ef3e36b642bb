"""``--for`` bounds opening the tables too (given at least 30 s in the room, here none):
on a NATS where no table service answers the room gives up at the end of ``--for``,
says no table was played, and does not wait for its 60 s table-opening timeout. Real
NATS (operator mode)."""

from __future__ import annotations

import asyncio
import io
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from studroom.services.auth.authority import Authority
from studroom.services.room.plans import plan_tables, table_ids
from studroom.services.room.progress import Progress
from studroom.services.room.room import play
from studroom.services.runtime.processes.supervisor import Services

pytestmark = pytest.mark.integration


def test_for_bounds_the_opening_of_the_tables(secure_nats_url: str, authority: Authority) -> None:
    plans = plan_tables(table_ids(2, prefix=f"itfor{uuid.uuid4().hex[:6]}t"), 2, {})
    nobody = Services({}, Path(tempfile.mkdtemp(prefix="studroom-it-for-")), instances=1, stores=1)  # not started

    async def main() -> object:
        return await play(secure_nats_url, authority, plans, seconds=2.0, pace_ms=0, stop=asyncio.Event(),
                          progress=Progress(io.StringIO(), enabled=False), services=nobody,
                          opening_at_least=0)

    started = time.monotonic()
    result = asyncio.run(main())
    print(f"the room gave up {time.monotonic() - started:.1f} s after it began (--for 2, no table service)")
    assert result.not_played == "the tables were not open within 2 s (0 of 2 tables open)"
    assert result.hands == 0 and result.seconds == 0.0 and result.restarts == {}
