"""The append function's parameters: one-dimensional PostgreSQL arrays built in
PostgreSQL's binary wire format, in one pass.

psycopg dumps a Python list element by element in Python (it looks for each element's
dumper, then frames it): with four arrays per batch that was a fifth of the table
service's CPU (docs/design/event-store.md, "Writing").  Here each array is built as
bytes at once and passed through a dumper that only names its type.  No NULL
elements (the append never has any).
"""

from __future__ import annotations

import struct
from itertools import chain, repeat
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

if TYPE_CHECKING:
    from .port import Batch, Snapshot

# Type oids (pg_type): the element's and the array's.
_TEXT, _TEXT_ARRAY = 25, 1009
_INT8, _INT8_ARRAY = 20, 1016
_BYTEA, _BYTEA_ARRAY = 17, 1001


class TextArray(bytes):
    """A ``text[]`` parameter, already in the binary format (:func:`text_array`)."""


class Int8Array(bytes):
    """A ``bigint[]`` parameter (:func:`int8_array`)."""


class ByteaArray(bytes):
    """A ``bytea[]`` parameter (:func:`bytea_array`)."""


def _header(element_oid: int, n: int) -> bytes:
    if n == 0:
        return struct.pack("!iiI", 0, 0, element_oid)             # no dimensions
    return struct.pack("!iiIii", 1, 0, element_oid, n, 1)          # 1 dimension, no NULLs, from 1


_LENGTH = struct.Struct("!I").pack


def _framed(items: Sequence[bytes]) -> bytes:
    """Each item after its length (iterated in C: no Python frame per item)."""
    return b"".join(chain.from_iterable(zip(map(_LENGTH, map(len, items)), items)))


def bytea_array(items: Sequence[bytes]) -> ByteaArray:
    return ByteaArray(_header(_BYTEA, len(items)) + _framed(items))


def text_array(items: Sequence[str]) -> TextArray:
    return TextArray(_header(_TEXT, len(items)) + _framed(list(map(str.encode, items))))


def int8_array(items: Sequence[int]) -> Int8Array:
    body = struct.pack("!" + "iq" * len(items), *chain.from_iterable(zip(repeat(8), items)))
    return Int8Array(_header(_INT8, len(items)) + body)


def append_arguments(batch: Batch, snapshots: Sequence[Snapshot], encode: Callable[[Any], tuple[str, bytes]],
                     wait: str) -> tuple[Any, ...] | None:
    """The append function's arguments for a checked batch (events and snapshots as
    columns, ``wait`` its lock timeout), or None when there is nothing to write."""
    ids: list[str] = []
    versions: list[int] = []
    topics: list[str] = []
    states: list[bytes] = []
    for stream_id, expected, events in batch:
        ids += [stream_id] * len(events)
        versions += range(expected + 1, expected + 1 + len(events))
        for event in events:
            topic, state = encode(event)
            topics.append(topic)
            states.append(state)
    if not ids and not snapshots:
        return None
    return (text_array(ids), int8_array(versions), text_array(topics), bytea_array(states), wait,
            text_array([s.stream_id for s in snapshots]), int8_array([s.version for s in snapshots]),
            text_array([s.format for s in snapshots]), bytea_array([s.state for s in snapshots]))


class _ArrayDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: bytes) -> bytes:
        return obj


class _TextArrayDumper(_ArrayDumper):
    oid = _TEXT_ARRAY


class _Int8ArrayDumper(_ArrayDumper):
    oid = _INT8_ARRAY


class _ByteaArrayDumper(_ArrayDumper):
    oid = _BYTEA_ARRAY


def register(adapters: psycopg.adapt.AdaptersMap = psycopg.adapters) -> None:
    """Teach ``adapters`` (by default every connection made from now on) these types."""
    adapters.register_dumper(TextArray, _TextArrayDumper)
    adapters.register_dumper(Int8Array, _Int8ArrayDumper)
    adapters.register_dumper(ByteaArray, _ByteaArrayDumper)


register()
