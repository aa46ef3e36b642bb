"""The cashier receives only the public events its cash-outs are made of (R3: a
player who leaves gets his seat's chips back): its consumer's filter and its handler
are made of one list.  A consumer of an older version, on an existing data folder,
which took every public event, gets the filter in place and keeps its position (the
timer's consumer too)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from studroom.domain.events import EVENT_TYPES, PlayerLeft
from studroom.services.cashier.cash_outs import CASHED_EVENTS, CashOuts, consumer_config
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.timer.streams import turns_consumer_config
from studroom.services.wire import subjects
from studroom.services.wire.declared import ensure_consumer
from studroom.services.wire.pull import shared_consumer


class Msg:
    def __init__(self, subject: str, data: bytes, headers: dict[str, str]) -> None:
        self.subject, self.data, self.headers = subject, data, headers
        self.metadata = SimpleNamespace(num_delivered=1)
        self.acked = False

    async def ack(self) -> None:
        self.acked = True


class Recorded(CashOuts):
    """The cash-outs' handler, its credits recorded instead of booked."""

    def __init__(self) -> None:
        super().__init__(books=None)  # type: ignore[arg-type]
        self.credits: list[tuple[str, int, str]] = []

    async def credit(self, table_id: str, version: int, left: Any) -> None:
        self.credits.append((table_id, version, left.player))


def test_R3_every_event_a_cash_out_is_made_of_is_in_the_cashiers_filter_and_no_other() -> None:
    config = consumer_config()
    assert config.filter_subject is None
    assert config.filter_subjects == [subjects.public_events_of("PlayerLeft")]
    assert config.ack_policy == AckPolicy.EXPLICIT                  # several instances share it
    acted = set()
    for event_type in EVENT_TYPES:
        kind = event_type.__name__
        body = msgspec.json.encode({"type": kind, "seat": 1, "player": "alice", "cashed_out": 500})
        msg = Msg(subjects.public_event("t1", kind), body, {subjects.EVENT_HEADER: kind, subjects.VERSION_HEADER: "9"})
        cash_outs = Recorded()
        asyncio.run(cash_outs.on_public(msg))
        assert msg.acked
        if cash_outs.credits:
            assert cash_outs.credits == [("t1", 9, "alice")]
            acted.add(event_type)
    assert acted == set(CASHED_EVENTS) == {PlayerLeft}


# ------------------------------------------------------ an older consumer, updated in place


@pytest.fixture(scope="module")
def own_nats() -> Iterator[str]:
    folder = Path(tempfile.mkdtemp(prefix="studroom-it-filter-"))
    try:
        with EmbeddedNats(folder, auth=False) as server:
            yield server.url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _old(config: ConsumerConfig) -> ConsumerConfig:
    """The same consumer as the version before the filters made it: every public event."""
    return shared_consumer(config.durable_name or "", subjects.all_public_events(), config.ack_wait or 5.0,
                           "before the filters")


@pytest.mark.integration
@pytest.mark.parametrize("made", [consumer_config, turns_consumer_config], ids=["cashier", "timer"])
def test_an_older_consumer_gets_the_filter_in_place_and_keeps_its_position(
        own_nats: str, made: Callable[[], ConsumerConfig]) -> None:
    new = made()
    wanted = {subject.rsplit(".", 1)[1] for subject in new.filter_subjects or []}

    async def main() -> None:
        nc = await nats.connect(own_nats)
        js = nc.jetstream()
        try:
            await js.add_stream(StreamConfig(name=subjects.PUBLIC_STREAM, subjects=[subjects.all_public_events()]))
            await ensure_consumer(js, subjects.PUBLIC_STREAM, _old(new))
            kinds = ["HandStarted", "TurnStarted", "PlayerLeft", "Acted", "PauseStarted", "PlayerLeft", "TurnStarted"]
            for n, kind in enumerate(kinds, 1):
                await js.publish(subjects.public_event("t1", kind), b"{}", headers={subjects.EVENT_HEADER: kind,
                                                                                     subjects.VERSION_HEADER: str(n)})
            durable = new.durable_name or ""
            sub = await js.pull_subscribe_bind(durable, subjects.PUBLIC_STREAM)
            for msg in await sub.fetch(3, timeout=5):          # the old consumer handled three
                await msg.ack_sync()
            await ensure_consumer(js, subjects.PUBLIC_STREAM, new)       # the new version starts
            info = await js.consumer_info(subjects.PUBLIC_STREAM, durable)
            assert info.config.filter_subjects == new.filter_subjects and not info.config.filter_subject
            assert info.config.ack_policy == AckPolicy.EXPLICIT
            assert info.num_pending == sum(1 for kind in kinds[3:] if kind in wanted)
            rest = await sub.fetch(10, timeout=2)
            assert [m.headers[subjects.EVENT_HEADER] for m in rest] == [k for k in kinds[3:] if k in wanted]
            await js.delete_stream(subjects.PUBLIC_STREAM)
        finally:
            await nc.close()

    asyncio.run(main())
