"""A relay on a NATS server with too little JetStream storage for its streams' max
bytes (issue 22): it stops with one line naming the stream it was creating and the
real fix (the server's max_file_store, or the relay's option), on a real embedded
server of the test's own (its streams' limits are the test's)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
import pytest
from studroom.services.relay.config import RelayConfig
from studroom.services.relay.streams import ensure_streams
from studroom.services.runtime.servers.embedded_nats import EmbeddedNats
from studroom.services.wire import subjects
from studroom.services.wire.declared import Refused

PETABYTE = 1 << 50          # more than any test machine's disk: the server cannot reserve it


def test_a_server_short_of_storage_stops_the_relay_with_the_fix(private_dir: Path) -> None:
    config = RelayConfig(public_max_bytes=1 << 20, private_max_bytes=PETABYTE)

    async def start_relay_streams(url: str) -> tuple[str, list[str]]:
        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            with pytest.raises(Refused) as refused:
                await ensure_streams(js, config)
            return str(refused.value), [info.config.name for info in await js.streams_info()]
        finally:
            await nc.close()

    with EmbeddedNats(private_dir, auth=False) as server:
        said, streams = asyncio.run(start_relay_streams(server.url))
    assert streams == [subjects.PUBLIC_STREAM]                     # the public one fitted; the private did not
    assert said.startswith(f"stream {subjects.PRIVATE_STREAM} cannot reserve its 1,125,899,906,842,624 bytes "
                           "(--private-max-bytes)")
    assert "raise the server's max_file_store" in said and "a smaller --public-max-bytes or --private-max-bytes" in said
    assert "by hand" not in said
    print(said)
