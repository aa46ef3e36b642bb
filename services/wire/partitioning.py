"""Which partition a table is in: the same function as the NATS server's mapping.

The server maps each sender's command subject (``studroom.cmd.<table>.<player>`` and
the like) to ``studroom.pcmd.<p>.<table>.<role>.<name>`` with ``{{partition(N,1)}}``
(:func:`.subjects.role_command_mapping`): FNV-1a (32 bit) of the table id, modulo N.  :func:`partition_of` computes it in Python (checked against a
real server in the integration tests), so any process can tell where a table lives
without asking NATS.
"""

from __future__ import annotations

from . import subjects

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv1a_32(data: bytes) -> int:
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def partition_of(table_id: str, partitions: int = subjects.PARTITIONS) -> int:
    """The partition the NATS server maps a table's commands to."""
    return fnv1a_32(table_id.encode()) % partitions


def partition_of_subject(subject: str) -> int:
    """``studroom.pcmd.<p>.<table>.<role>.<name>`` -> p."""
    return int(subject.split(".")[2])
