"""Moved: the port is :mod:`.port`, the adapters :mod:`.postgres` and :mod:`.memory`,
the mapper :mod:`.codec` (this module goes once nothing imports it)."""

from .codec import MsgspecMapper, NullTranscoder, register_event_types
from .memory import InMemoryEventStore
from .port import Batch, EventStore, Notification, VersionConflict
from .postgres import NotificationReader, PostgresEventStore, ensure_schema, eventsourcing_env

__all__ = [
    "Batch", "EventStore", "InMemoryEventStore", "MsgspecMapper", "Notification", "NotificationReader",
    "NullTranscoder", "PostgresEventStore", "VersionConflict", "ensure_schema", "eventsourcing_env",
    "register_event_types",
]
