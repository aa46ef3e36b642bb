"""The observer's HTTP endpoint without NATS: /metrics, /healthz (503 when a part is not
ready), nothing else, on 127.0.0.1 only; GET and HEAD."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

from studroom.services.runtime.observability.metrics import counter
from studroom.services.runtime.processes.observe import Observer


def _get(url: str, method: str = "GET") -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=5) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


async def _serve_and_ask(observer: Observer, paths: list[str], method: str = "GET") -> list[tuple[int, str, str]]:
    stop = asyncio.Event()
    task = asyncio.create_task(observer.run(stop))
    while observer.metrics_url is None:
        await asyncio.sleep(0.01)
    base = observer.metrics_url.removesuffix("/metrics")
    try:
        return [await asyncio.to_thread(_get, base + path, method) for path in paths]
    finally:
        stop.set()
        await task


def test_metrics_and_health_over_http_and_nothing_else() -> None:
    ready = [True]
    observer = Observer("ledger", "ledger-1", metrics_port=0)
    observer.add(lambda: [counter("ledger_booked", "events booked", 42)])
    observer.ready(lambda: {"ready": ready[0], "stores": 2})
    (metrics, healthy, missing) = asyncio.run(_serve_and_ask(observer, ["/metrics", "/healthz", "/secrets"]))
    assert metrics[0] == 200 and metrics[1].startswith("text/plain; version=0.0.4")
    assert 'studroom_ledger_booked_total{instance="ledger-1",service="ledger"} 42.0' in metrics[2]
    assert healthy[0] == 200
    assert json.loads(healthy[2]) == {"ok": True, "service": "ledger", "instance": "ledger-1", "stores": 2}
    assert missing[0] == 404
    assert observer.metrics_url is not None and observer.metrics_url.startswith("http://127.0.0.1:")

    ready[0] = False
    observer = Observer("ledger", "ledger-1", metrics_port=0)
    observer.ready(lambda: {"ready": ready[0]})
    ((status, _, body),) = asyncio.run(_serve_and_ask(observer, ["/healthz"]))
    assert status == 503 and json.loads(body)["ok"] is False


def test_head_answers_as_get_without_a_body_and_other_methods_are_refused() -> None:
    observer = Observer("ledger", "ledger-1", metrics_port=0)
    observer.add(lambda: [counter("ledger_booked", "events booked", 42)])
    (metrics, healthy) = asyncio.run(_serve_and_ask(observer, ["/metrics", "/healthz"], "HEAD"))
    assert metrics == (200, "text/plain; version=0.0.4; charset=utf-8", "")
    assert healthy == (200, "application/json", "")
    observer = Observer("ledger", "ledger-1", metrics_port=0)
    ((status, _, _),) = asyncio.run(_serve_and_ask(observer, ["/metrics"], "POST"))
    assert status == 405
