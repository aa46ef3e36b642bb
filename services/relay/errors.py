"""The relay's errors: what tells a store's loop to retry, and a session to reconnect."""

from __future__ import annotations


class RelayError(RuntimeError):
    """Something about a whole store the relay must not guess about (e.g. a store
    shorter than its position record); retried, never set aside."""


class BusError(RuntimeError):
    """NATS failed (connection, timeout, refusal): the session is abandoned."""


class Conflict(RuntimeError):
    """The position record changed under us: someone else relays this store."""
