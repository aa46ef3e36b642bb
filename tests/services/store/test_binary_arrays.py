"""The append's arrays built in the binary format read back as PostgreSQL reads lists
(services/store/binary_arrays.py): every text, number and byte string as it was."""

from __future__ import annotations

import psycopg
import pytest
from studroom.services.store.binary_arrays import bytea_array, int8_array, text_array

TEXTS = ["", "t1", "a,b", '"quoted"', "back\\slash", "{braces}", "NULL", "Zoë ♠", "x" * 5000]
NUMBERS = [0, 1, -1, 2**63 - 1, -(2**63), 100_000]
BYTES = [b"", b"\x00\x01\xff", b'{"type":"Acted"}', bytes(range(256)) * 20]


@pytest.mark.parametrize("n", [0, 1, 3])
def test_arrays_read_back_as_written(database_url: str, n: int) -> None:
    texts, numbers, blobs = TEXTS[:n] if n < 3 else TEXTS, NUMBERS[:n] if n < 3 else NUMBERS, \
        BYTES[:n] if n < 3 else BYTES
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT %s::text[], %s::bigint[], %b::bytea[], cardinality(%s::text[])",
            (text_array(texts), int8_array(numbers), bytea_array(blobs), text_array(texts)),
        ).fetchone()
    assert row is not None
    assert row[0] == texts
    assert row[1] == numbers
    assert [bytes(b) for b in row[2]] == blobs
    assert row[3] == len(texts)


def test_unnest_of_the_arrays_pairs_them_up(database_url: str) -> None:
    """The append function's INSERT ... SELECT * FROM unnest(...) gets the rows in order."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT * FROM unnest(%s::text[], %s::bigint[], %b::bytea[])",
            (text_array(["t1", "t1", "t2"]), int8_array([4, 5, 1]), bytea_array([b"a", b"b", b"c"])),
        ).fetchall()
    assert [(i, v, bytes(s)) for i, v, s in rows] == [("t1", 4, b"a"), ("t1", 5, b"b"), ("t2", 1, b"c")]
