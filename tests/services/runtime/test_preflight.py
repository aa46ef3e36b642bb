"""Preflight and declared infrastructure (issue 13): each misconfiguration refused at
start with one line naming the fix (an old server by its INFO, a server without the
command mapping, a timer stream the server will not give schedules); streams declared
twice change nothing, a stream with other limits is brought up to date."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
import pytest
from nats.js.api import RetentionPolicy, StreamConfig
from studroom.services.relay.config import RelayConfig
from studroom.services.relay.streams import ensure_streams, stream_configs
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.runtime.processes.preflight import Refused, check_mapping, check_server, preflight
from studroom.services.timer.streams import ensure_timer_stream, timer_stream_config
from studroom.services.wire import subjects
from studroom.services.wire.declared import CREATED, UNCHANGED, UPDATED, ensure_consumer, ensure_stream
from studroom.services.wire.pull import shared_consumer

GOOD_INFO = {"server_name": "n1", "version": "2.12.0", "jetstream": True}


# ------------------------------------------------------------- the server's INFO


def test_a_server_older_than_2_12_is_refused_naming_the_upgrade() -> None:
    with pytest.raises(Refused) as refused:
        check_server(GOOD_INFO | {"version": "2.11.9"})
    assert str(refused.value.code) == ("n1 runs nats-server 2.11.9: Studroom needs 2.12 or newer (JetStream "
                                       "message schedules time turns out); upgrade nats-server")


def test_a_server_without_jetstream_is_refused() -> None:
    with pytest.raises(Refused, match="runs without JetStream: enable it"):
        check_server(GOOD_INFO | {"jetstream": False})
    with pytest.raises(Refused, match="does not say its version"):
        check_server({"jetstream": True})
    check_server(GOOD_INFO)
    check_server(GOOD_INFO | {"version": "2.15.1"})


# ------------------------------------------------------- a server without mappings


class PlainNats(EmbeddedNats):
    """A plain open nats-server with JetStream: no command subject mapping."""

    def _trust(self) -> dict[str, Any]:
        return {}


@pytest.fixture(scope="module")
def plain_url() -> Iterator[str]:
    with PlainNats(Path(tempfile.mkdtemp(prefix="studroom-plain-")), auth=False) as server:
        yield server.url


def _with(url: str, check: Any) -> Any:
    async def main() -> Any:
        nc = await nats.connect(url)
        try:
            return await check(nc)
        finally:
            await nc.close()

    return asyncio.run(main())



@pytest.mark.integration
def test_a_server_without_the_command_mapping_is_refused(plain_url: str) -> None:
    with pytest.raises(Refused) as refused:
        _with(plain_url, lambda nc: check_mapping(nc, "service", "timer", wait=0.5))
    line = str(refused.value.code)
    assert line.startswith("a command sent to studroom.svc.studroom_preflight.timer did not arrive on its "
                           "partition subject studroom.pcmd.0.studroom_preflight.service.timer within 0.5 s: "
                           "the NATS account has no command subject mapping")
    assert "\n" not in line
    _with(plain_url, lambda nc: preflight(nc))          # the server itself is fine (no sender: no mapping)


@pytest.mark.integration
def test_the_mapping_passes_and_a_different_partition_count_is_refused(nats_url: str) -> None:
    _with(nats_url, lambda nc: preflight(nc, sender=("service", "timer")))
    with pytest.raises(Refused, match="maps table studroom_preflight to partition 0, this service computes 6 of 7"):
        _with(nats_url, lambda nc: check_mapping(nc, "service", "table", partitions=7))


@pytest.mark.integration
@pytest.mark.parametrize("name", ["table", "timer", "lobby", "cashier"])
def test_each_service_may_probe_the_mapping_with_its_own_credentials(connect_as: Any, name: str) -> None:
    async def main() -> None:
        nc = await connect_as("service", name)
        try:
            await preflight(nc, sender=("service", name))
        finally:
            await nc.close()

    asyncio.run(main())


# ------------------------------------------------------------ declared streams


@pytest.mark.integration
def test_a_timer_stream_created_without_schedules_gets_them(plain_url: str) -> None:
    async def check(nc: Any) -> None:
        js = nc.jetstream()
        await js.add_stream(timer_stream_config().evolve(allow_msg_schedules=None))
        assert not (await js.stream_info(subjects.TIMER_STREAM)).config.allow_msg_schedules
        await ensure_timer_stream(js)
        assert (await js.stream_info(subjects.TIMER_STREAM)).config.allow_msg_schedules is True
        assert await ensure_stream(js, timer_stream_config()) == UNCHANGED

    _with(plain_url, check)


class RefusingJetStream:
    """A timer stream without schedules on a server that refuses to change it."""

    async def stream_info(self, name: str) -> Any:
        return type("Info", (), {"config": timer_stream_config().evolve(allow_msg_schedules=False)})()

    async def update_stream(self, config: StreamConfig) -> None:
        raise nats.js.errors.BadRequestError(code=400, err_code=10052, description="stream configuration update "
                                             "can not change message schedules")


def test_a_timer_stream_the_server_will_not_give_schedules_is_refused() -> None:
    with pytest.raises(Refused) as refused:
        asyncio.run(ensure_timer_stream(RefusingJetStream()))
    assert str(refused.value.code) == (
        "stream STUDROOM_TIMERS cannot be updated (allow_msg_schedules): the NATS server says 'stream "
        "configuration update can not change message schedules' (code 10052); fix the stream by hand (nats "
        "stream edit) or delete it, then start again")


@pytest.mark.integration
def test_declaring_twice_changes_nothing_and_other_limits_are_brought_up_to_date(plain_url: str) -> None:
    config = RelayConfig(public_max_age=3600.0, private_max_age=600.0, public_max_bytes=1 << 26,
                         private_max_bytes=1 << 24)

    async def check(nc: Any) -> None:
        js = nc.jetstream()
        public, private = stream_configs(config)
        assert [await ensure_stream(js, c) for c in (public, private)] == [CREATED, CREATED]
        assert [await ensure_stream(js, c) for c in (public, private)] == [UNCHANGED, UNCHANGED]
        await js.update_stream(public.evolve(max_age=600.0, max_bytes=-1, subjects=[*public.subjects, "extra.>"]))
        assert await ensure_stream(js, public) == UPDATED
        have = (await js.stream_info(public.name)).config
        assert (have.max_age, have.max_bytes) == (3600.0, 1 << 26)
        assert sorted(have.subjects) == ["extra.>", "studroom.pub.>"]    # an operator's subject is kept
        await ensure_streams(js, config)
        assert (await js.stream_info(private.name)).config.max_bytes == 1 << 24
        assert (await js.stream_info(private.name)).config.retention == RetentionPolicy.LIMITS

    _with(plain_url, check)


@pytest.mark.integration
def test_a_consumer_declared_again_with_other_settings_is_updated(plain_url: str) -> None:
    async def check(nc: Any) -> None:
        js = nc.jetstream()
        await ensure_stream(js, StreamConfig(name="TEST_DECLARED", subjects=["test.declared.>"]))
        await ensure_consumer(js, "TEST_DECLARED", shared_consumer("c", "test.declared.>", 5.0, "first"))
        await ensure_consumer(js, "TEST_DECLARED", shared_consumer("c", "test.declared.>", 10.0, "second"))
        have = (await js.consumer_info("TEST_DECLARED", "c")).config
        assert (have.ack_wait, have.description) == (10.0, "second")

    _with(plain_url, check)
