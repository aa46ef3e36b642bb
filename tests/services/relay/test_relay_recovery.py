"""The pure parts of a restart: the position record as stored in KV, and which
subjects the recovery scan reads."""

from __future__ import annotations

import json

from studroom.services.relay.outbox import Outgoing
from studroom.services.relay.position import PositionRecord
from studroom.services.relay.recovery import scan_filters
from studroom.services.wire import subjects


def test_the_position_record_is_json_with_every_field_and_the_time() -> None:
    value = PositionRecord(position=120, pub_seq=480, priv_seq=96, window=2000).encode(at=1700000000.5)
    assert json.loads(value) == {"v": 1, "position": 120, "pub_seq": 480, "priv_seq": 96, "window": 2000,
                                 "at": 1700000000.5}
    assert PositionRecord.decode(value) == PositionRecord(120, 480, 96, 2000)


def test_no_record_and_a_record_without_fields_read_as_nothing_relayed() -> None:
    assert PositionRecord.decode(None) == PositionRecord(0, 0, 0, 0)
    assert PositionRecord.decode(b"") == PositionRecord(0, 0, 0, 0)
    assert PositionRecord.decode(b'{"position": 7}') == PositionRecord(7, 0, 0, 0)


def _message(stream: str, table: str) -> Outgoing:
    return Outgoing(stream, "", "", {}, b"", table)


def test_the_scan_reads_the_subjects_of_the_tables_in_flight_per_stream() -> None:
    messages = [
        _message(subjects.PUBLIC_STREAM, "t2"), _message(subjects.PRIVATE_STREAM, "t2"),
        _message(subjects.PUBLIC_STREAM, "t1"), _message(subjects.PUBLIC_STREAM, "t2"),
    ]
    assert scan_filters(messages) == {
        subjects.PUBLIC_STREAM: [subjects.public_events("t1"), subjects.public_events("t2")],
        subjects.PRIVATE_STREAM: [subjects.table_private_events("t2")],
    }
    assert scan_filters([]) == {}
