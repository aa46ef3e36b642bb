"""The bare figures a benchmark is read against, measured in the same run on the same
servers: single-row INSERT commits per second, NATS request/reply round trips per second."""

from __future__ import annotations

import time
import uuid
from typing import Any

import msgspec
import psycopg
from psycopg import sql


def bare_commits_per_second(database_url: str, seconds: float) -> float:
    """Single-row INSERT commits per second, one psycopg connection, autocommit."""
    table = f"bench_bare_{uuid.uuid4().hex[:8]}"
    payload = msgspec.json.encode({"type": "Acted", "seat": 3, "action": "call", "amount": 20})
    with psycopg.connect(database_url, autocommit=True) as conn:
        name = sql.Identifier(table)
        conn.execute(sql.SQL("CREATE TABLE {} (id bigserial PRIMARY KEY, data bytea)").format(name))
        insert = sql.SQL("INSERT INTO {} (data) VALUES (%s)").format(name)
        try:
            for _ in range(20):                     # warm up
                conn.execute(insert, (payload,), prepare=True)
            done, started = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - started) < seconds:
                for _ in range(10):
                    conn.execute(insert, (payload,), prepare=True)
                done += 10
            return done / elapsed
        finally:
            conn.execute(sql.SQL("DROP TABLE {}").format(name))


async def bare_nats_round_trips(nats_url: str, seconds: float) -> float:
    """Request/reply round trips per second to a trivial responder (one at a time)."""
    import nats

    server = await nats.connect(nats_url, name="studroom-bench-responder")
    client = await nats.connect(nats_url, name="studroom-bench-requester")
    subject = f"studroom.bench.echo.{uuid.uuid4().hex[:8]}"

    async def echo(msg: Any) -> None:
        await msg.respond(b'{"ok":true}')

    await server.subscribe(subject, cb=echo)
    await server.flush()
    try:
        body = b'{"type":"Act","seat":3,"action":"call"}'
        for _ in range(50):
            await client.request(subject, body, timeout=2)
        done, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            for _ in range(50):
                await client.request(subject, body, timeout=2)
            done += 50
        return done / elapsed
    finally:
        await client.close()
        await server.close()
