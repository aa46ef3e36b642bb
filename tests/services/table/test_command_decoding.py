"""Request decoding (services/table/request_decoding.py): what a request's body must be
before the table sees it. No servers."""

from __future__ import annotations

import pytest

from studroom.domain.commands import (
    COMMAND_TYPES, Act, BuyIn, CloseTable, Command, ConfigureTable, DealStreet, Leave, Muck, OpenTable, PauseTable,
    PostAnte, RemovePlayer, ResumeTable, ScheduleHand, Show, SitDown, SitOut, SitOutPlayer, SkipAnte, StartHand, Timeout,
    JoinWaitingList, LeaveWaitingList,
)
from studroom.domain.config import Stakes, TableConfig
from studroom.domain.events import ChipsBought
from studroom.services.table.request_decoding import BadRequest, check_request, decode_request
from studroom.services.wire import protocol

CONFIG = TableConfig(game="five_card_stud", stakes=Stakes(ante=5, bring_in=10, small_bet=20, big_bet=40))

COMMANDS: list[Command] = [
    OpenTable(table_id="t1", config=CONFIG),
    SitDown(seat=3, player="ann", auto_ante=False),
    BuyIn(seat=3, amount=500, command_id="1764601234567890"),
    SitOut(seat=3, sitting_out=False),
    Leave(seat=3),
    StartHand(seed="ab" * 32, button=2, now_ms=5),
    ScheduleHand(pause_ms=1500),
    PostAnte(seat=1),
    SkipAnte(seat=1),
    DealStreet(cards=["As", "Kd"]),
    Act(seat=1, action="raise", size="big"),
    Timeout(turn=9),
    Show(seat=1),
    Muck(seat=2),
    ConfigureTable(config=CONFIG),
    PauseTable(),
    ResumeTable(),
    CloseTable(command_id="1764601234567891"),
    SitOutPlayer(player="ann"),
    RemovePlayer(player="ann"),
    JoinWaitingList(player="ann"),
    LeaveWaitingList(player="ann"),
]


def test_the_samples_cover_every_table_command() -> None:
    assert {type(c) for c in COMMANDS} == set(COMMAND_TYPES)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: type(c).__name__)
def test_every_command_decodes_from_the_wire_format(command: Command) -> None:
    decoded = decode_request("t1", protocol.encode_command(command))
    assert decoded == command and type(decoded) is type(command)


def test_a_view_request_decodes_beside_the_commands() -> None:
    assert decode_request("t1", b'{"type": "ViewTable"}') == protocol.ViewTable()


def test_any_buffer_type_is_accepted() -> None:
    data = protocol.encode_command(Act(seat=2, action="call"))
    assert decode_request("t1", bytearray(data)) == decode_request("t1", memoryview(data)) == Act(seat=2, action="call")


@pytest.mark.parametrize(("table_id", "body", "why"), [
    ("t1", b"{not json", "not a table request"),
    ("t1", b'{"type": "Dance", "seat": 1}', "not a table request"),
    ("t1", b'{"type": "Act", "seat": "x", "action": "call"}', "not a table request"),
    ("t1", b'{"type": "Act", "seat": 1, "action": "shove"}', "not a table request"),
    ("t1", b"", "not a table request"),
    ("t1", b'{"type": "ViewTable", "seat": 1}', "not a table request"),
    ("t1", b'{"type": "Act", "seat": 1, "action": "call", "command_id": "' + b"9" * 10_000 + b'"}',
     f"at most {protocol.MAX_REQUEST_BYTES} bytes"),
    ("bad.id", b'{"type": "Act", "seat": 1, "action": "call"}', "bad.id"),
    ("", b'{"type": "Act", "seat": 1, "action": "call"}', ""),
    ("t1", protocol.encode_command(OpenTable(table_id="t9", config=CONFIG)), "names table 't9'"),
])
def test_a_bad_request_says_what_is_wrong(table_id: str, body: bytes, why: str) -> None:
    with pytest.raises(BadRequest) as refused:
        decode_request(table_id, body)
    assert why in refused.value.message and refused.value.message == str(refused.value)


def test_only_table_requests_pass_the_check() -> None:
    assert check_request("t1", Leave(seat=1)) == Leave(seat=1)
    assert check_request("t1", protocol.ViewTable()) == protocol.ViewTable()
    with pytest.raises(BadRequest, match="ChipsBought"):
        check_request("t1", ChipsBought(seat=1, amount=5))      # an event is not a command
    with pytest.raises(BadRequest, match="names table"):
        check_request("t1", OpenTable(table_id="t2", config=CONFIG))
