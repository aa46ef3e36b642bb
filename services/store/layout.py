"""Where a table's events are stored: the event stores of an installation.

Partition ``p`` (:mod:`..wire.partitioning`) is stored in event store ``p % n_stores``,
PostgreSQL schema ``studroom_p{j}``.  Every process of an installation must use the
same number of stores, or a table's history would be looked for in the wrong store.
"""

from __future__ import annotations

from ..wire import subjects
from ..wire.partitioning import partition_of

STORE_SCHEMA_PREFIX = "studroom_p"


def store_index(partition: int, n_stores: int) -> int:
    return partition % n_stores


def store_of_table(table_id: str, n_stores: int, partitions: int = subjects.PARTITIONS) -> int:
    return store_index(partition_of(table_id, partitions), n_stores)


def store_schema(index: int, prefix: str = STORE_SCHEMA_PREFIX) -> str:
    """The PostgreSQL schema of event store ``index``."""
    return f"{prefix}{index}"


def store_schemas(stores: int, prefix: str = STORE_SCHEMA_PREFIX) -> list[str]:
    """The schemas of an installation with ``stores`` event stores."""
    return [store_schema(j, prefix) for j in range(stores)]
