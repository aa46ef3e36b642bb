"""Preflight: what a service checks at start about what it depends on, refusing to
start with ONE line that names the fix (``Refused``: ``process.run`` logs it, exit 2).

- the NATS server: version 2.12 or newer (JetStream message schedules) with JetStream
  on, and JetStream enabled for the service's account;
- the account's command subject mapping (``subjects.role_command_mapping``), for the
  services that send or serve commands: a probe command to table
  ``studroom_preflight`` must arrive on its partition subject, in the partition
  :func:`~..wire.partitioning.partition_of` computes.

The timer stream's schedules are checked where it is declared (``timer/streams.py``).
Why and what each refusal says: docs/design/operations-checks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from ...wire import subjects
from ...wire.declared import MIN_NATS_VERSION, Refused
from ...wire.partitioning import partition_of, partition_of_subject

__all__ = ["MIN_NATS_VERSION", "Refused", "check_jetstream", "check_mapping", "check_server", "preflight",
           "preflight_url"]

log = logging.getLogger("studroom.preflight")

PROBE_WAIT = 2.0                  # seconds a probe command may take to come back


def check_server(info: Mapping[str, Any]) -> None:
    """The server's INFO (what it says when a client connects): new enough, JetStream on."""
    where = info.get("server_name") or info.get("host") or "the NATS server"
    text = str(info.get("version") or "")
    match = re.match(r"v?(\d+)\.(\d+)\.(\d+)", text)
    if match is None:
        raise Refused(f"{where} does not say its version ({text!r}): Studroom needs nats-server 2.12 or newer")
    if tuple(int(g) for g in match.groups()) < MIN_NATS_VERSION:
        raise Refused(f"{where} runs nats-server {text}: Studroom needs 2.12 or newer (JetStream message "
                      f"schedules time turns out); upgrade nats-server")
    if not info.get("jetstream"):
        raise Refused(f"{where} runs without JetStream: enable it (a `jetstream {{}}` block in its configuration "
                      f"or `nats-server -js`)")


async def check_jetstream(nc: Any) -> None:
    """JetStream answers for this connection's account."""
    import nats.errors
    import nats.js.errors

    try:
        await nc.jetstream().account_info()
    except (nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError, nats.js.errors.APIError) as e:
        raise Refused(f"JetStream is not enabled for this account ({type(e).__name__}): give the account "
                      f"JetStream limits (the Authority's account JWT, or `jetstream: enabled` for the account)") from e


async def check_mapping(nc: Any, role: str, name: str, partitions: int = subjects.PARTITIONS,
                        wait: float = PROBE_WAIT) -> None:
    """A command of ``role``/``name`` to table ``studroom_preflight`` arrives mapped, on
    the partition the services compute (nobody answers it: the table service ignores a
    command without a body and reply subject)."""
    table = subjects.PREFLIGHT_TABLE
    sent = subjects.command_from(role, name, table)
    expected = partition_of(table, partitions)
    arrived: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def on_probe(msg: Any) -> None:
        if not arrived.done():
            arrived.set_result(msg.subject)

    sub = await nc.subscribe(subjects.preflight_probe(role, name), cb=on_probe)
    try:
        await nc.flush()
        await nc.publish(sent, b"")
        await nc.flush()
        try:
            subject = await asyncio.wait_for(arrived, wait)
        except TimeoutError:
            raise Refused(
                f"a command sent to {sent} did not arrive on its partition subject "
                f"{subjects.partition_command(expected, table, role, name)} within {wait:g} s: the NATS account has "
                f"no command subject mapping (operator mode: write the trust configuration again with "
                f"`studroom auth server-config` and reload the servers; open server: its `mappings` "
                f"block, services/wire/subjects.py role_command_mapping)") from None
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    got = partition_of_subject(subject)
    if got != expected:
        raise Refused(f"the NATS account maps table {table} to partition {got}, this service computes "
                      f"{expected} of {partitions} partitions: the account's mapping and --partitions must "
                      f"agree (16 unless changed in both)")


async def preflight(nc: Any, *, sender: tuple[str, str] | None = None, partitions: int = subjects.PARTITIONS,
                    jetstream: bool = True) -> None:
    """Everything a service checks on its NATS connection ``nc`` before it starts:
    the server (and JetStream, unless ``jetstream`` is False); with ``sender`` (role,
    name), the command mapping it sends or serves commands through."""
    check_server(nc._server_info)
    if jetstream:
        await check_jetstream(nc)
    if sender is not None:
        await check_mapping(nc, *sender, partitions=partitions)


async def preflight_url(url: str, creds: str | os.PathLike[str] | None, name: str, **checks: Any) -> None:
    """:func:`preflight` on a connection of its own (for a service that makes its
    connections later, the relay)."""
    import nats.errors

    from . import process

    try:
        nc = await process.connect(url, f"studroom-{name}-preflight", creds=creds, max_reconnect_attempts=0)
    except (OSError, nats.errors.Error) as e:        # not reachable now: the service's own retries
        log.warning("%s: preflight skipped, NATS not reachable now (%r)", name, e)
        return
    try:
        await preflight(nc, **checks)
    finally:
        with contextlib.suppress(Exception):
            await nc.close()
