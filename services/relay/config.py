"""The relay's settings, with their defaults (``bootstrap`` offers some as options)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..runtime.retry import Backoff


@dataclass(frozen=True)
class RelayConfig:
    batch_size: int = 1000          # notifications per batch (one batch in flight per store)
    poll_interval: float = 0.1      # seconds between reads of an idle store nobody hears (commits.py down)
    ack_timeout: float = 10.0       # a batch's acks must all arrive within this
    duplicate_window: float = 120.0  # the streams' Nats-Msg-Id dedupe window, seconds
    private_max_age: float = 24 * 3600.0   # seconds a private copy (down cards) is kept
    public_max_age: float = 7 * 24 * 3600.0  # seconds a public view is kept
    private_max_bytes: int = 1 << 30        # bytes the private stream keeps at most (oldest dropped)
    public_max_bytes: int = 4 << 30         # bytes the public stream keeps at most (oldest dropped)
    replicas: int = 1               # stream and KV replicas (production: 3)
    backoff: Backoff = Backoff(first=0.1, longest=2.0)   # retries: 0.1 s doubling to 2 s, jittered
    connect_timeout: float = 2.0
    request_timeout: float = 5.0    # JetStream API requests
    position_interval: float = 0.25  # seconds: how often a busy relay writes its position
    max_tables: int = 100_000       # seat maps kept (least recently used dropped)
    # Tests only: called as fault(point, store) at "acked" (a batch's acks are in,
    # its position not yet written); an exception there counts as a bus failure.
    fault: Callable[[str, str], None] | None = field(default=None, compare=False)
