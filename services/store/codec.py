"""How events are stored: msgspec JSON bytes under the event class's topic.

``MsgspecMapper`` is an eventsourcing ``Mapper`` (the stores use its ``encode`` and
``decode``; eventsourcing Applications may name it as ``MAPPER_TOPIC``), built with
the no-op ``NullTranscoder``.  Decoding goes by the stored topic, so register the event
types of a process at import (``register_event_types``); how events may evolve is in
docs/design/event-store.md.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

import msgspec
from eventsourcing.persistence import Mapper, StoredEvent, Transcoder
from eventsourcing.utils import get_topic, resolve_topic

if TYPE_CHECKING:
    from eventsourcing.cipher import Cipher
    from eventsourcing.compressor import Compressor


class NullTranscoder(Transcoder):
    """The no-op transcoder: bytes in, bytes out (msgspec did the work)."""

    def encode(self, obj: Any) -> bytes:
        if isinstance(obj, bytes):
            return obj
        return msgspec.json.encode(obj)

    def decode(self, data: bytes) -> Any:
        return data


class MsgspecMapper(Mapper):  # type: ignore[type-arg]
    """Stores msgspec Structs as ``msgspec.json`` bytes under their class's topic.

    Works for the event stores (``encode``/``decode``) and as an eventsourcing
    ``MAPPER_TOPIC`` for Applications whose events are Structs that carry
    ``originator_id`` and ``originator_version`` fields.
    """

    def __init__(
        self,
        transcoder: Transcoder | None = None,
        compressor: Compressor | None = None,
        cipher: Cipher | None = None,
    ) -> None:
        super().__init__(transcoder or NullTranscoder(), compressor, cipher)
        self._decoders: dict[str, msgspec.json.Decoder[Any]] = {}
        self._topics: dict[type, str] = {}
        self._encode = msgspec.json.Encoder().encode

    def topic(self, cls: type) -> str:
        """The topic of an event class (cached: one dict lookup per event)."""
        topic = self._topics.get(cls)
        if topic is None:
            topic = self._topics[cls] = get_topic(cls)
        return topic

    def encode(self, event: Any) -> tuple[str, bytes]:
        """``(topic, state)`` of an event."""
        data = self._encode(event)
        if self.compressor:
            data = self.compressor.compress(data)
        if self.cipher:
            data = self.cipher.encrypt(data)
        return self.topic(type(event)), data

    def decode(self, topic: str, data: bytes) -> Any:
        """The event stored as ``(topic, state)``."""
        decoder = self._decoders.get(topic)
        if decoder is None:
            decoder = msgspec.json.Decoder(resolve_topic(topic))
            self._decoders[topic] = decoder
        if self.cipher:
            data = self.cipher.decrypt(data)
        if self.compressor:
            data = self.compressor.decompress(data)
        return decoder.decode(data)

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        topic, state = self.encode(domain_event)
        return StoredEvent(
            originator_id=domain_event.originator_id,
            originator_version=domain_event.originator_version,
            topic=topic,
            state=state,
        )

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        return self.decode(stored_event.topic, stored_event.state)


def register_event_types(*types: Any) -> None:
    """Register event classes (or unions of them) under their topics, so that any
    process can decode them, also classes with a ``TOPIC`` attribute."""
    for tp in types:
        members = typing.get_args(tp) if typing.get_args(tp) else (tp,)
        for member in members:
            get_topic(member)  # registers the topic -> class mapping
