"""The pure part of a restart: the position record as stored in KV (the scan itself:
test_relay_service.py and test_relay_set_aside.py)."""

from __future__ import annotations

import json

from studroom.services.relay.position import PositionRecord


def test_the_position_record_is_json_with_every_field_and_the_time() -> None:
    value = PositionRecord(position=120, pub_seq=480, priv_seq=96, window=2000).encode(at=1700000000.5)
    assert json.loads(value) == {"v": 1, "position": 120, "pub_seq": 480, "priv_seq": 96, "window": 2000,
                                 "at": 1700000000.5}
    assert PositionRecord.decode(value) == PositionRecord(120, 480, 96, 2000)


def test_no_record_and_a_record_without_fields_read_as_nothing_relayed() -> None:
    assert PositionRecord.decode(None) == PositionRecord(0, 0, 0, 0)
    assert PositionRecord.decode(b"") == PositionRecord(0, 0, 0, 0)
    assert PositionRecord.decode(b'{"position": 7}') == PositionRecord(7, 0, 0, 0)
