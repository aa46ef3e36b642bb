"""A relay started before its PostgreSQL answers waits for it and starts, without
exiting (runtime/processes/starting.py): real servers, the database behind a gate
that refuses connections until it opens."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from urllib.parse import urlsplit, urlunsplit

import pytest
from relay_stack import start_relay
from studroom.services.relay.config import RelayConfig
from studroom.services.runtime.servers.server_process import free_port


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


class Gate:
    """A port that refuses connections until :meth:`open`, then forwards them to ``url``'s server."""

    def __init__(self, url: str) -> None:
        self.target = urlsplit(url)
        self.port = free_port()
        self.url = urlunsplit(self.target._replace(netloc=self.target.netloc.replace(
            f"{self.target.hostname}:{self.target.port}", f"127.0.0.1:{self.port}")))
        self.server: asyncio.Server | None = None

    async def open(self) -> None:
        self.server = await asyncio.start_server(self._forward, "127.0.0.1", self.port)

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        to_reader, to_writer = await asyncio.open_connection(self.target.hostname, self.target.port)
        await asyncio.gather(_pipe(reader, to_writer), _pipe(to_reader, writer))

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


@pytest.mark.timeout(60)
def test_a_relay_started_before_its_postgresql_answers_starts_once_it_does(
        nats_url: str, database: str, caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        gate, stop = Gate(database), asyncio.Event()
        task, ready = start_relay(nats_url, gate.url, RelayConfig(), stop)
        try:
            await asyncio.sleep(2.0)                 # several attempts: refused each time
            assert not task.done() and not ready
            await gate.open()
            deadline = time.monotonic() + 30
            while not ready:
                assert not task.done(), task.exception()
                assert time.monotonic() < deadline, "the relay did not start once PostgreSQL answered"
                await asyncio.sleep(0.05)
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 15)
            gate.close()
        assert task.exception() is None

    with caplog.at_level(logging.INFO, logger="studroom.starting"):
        asyncio.run(main())
    said = [r.getMessage() for r in caplog.records if r.name == "studroom.starting"]
    assert len([s for s in said if "cannot start yet" in s]) == 1, said      # said once, not per attempt
    assert any("relay started after" in s for s in said), said
