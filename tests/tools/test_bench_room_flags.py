"""``studroom bench room`` picks its rows from its flags: lists of table counts and of
instances x stores [x PostgreSQL servers]; a bad value is one line on stderr and exit
code 2 (nothing starts)."""

from __future__ import annotations

import argparse

import pytest
from studroom.services.cli.main import build_parser


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()


@pytest.mark.parametrize("flags", ["--tables 0", "--tables 4,x", "--tables ,", "--layouts 2", "--layouts 0x1",
                                   "--layouts 1x", "--layouts 2x2x0", "--layouts 2x2x2x2", "--layouts 2x1x2",
                                   "--layouts 1x1,2x", "--idle -1", "--seconds 0", "--auth maybe"])
def test_a_bad_row_flag_is_one_line_and_exit_code_2(flags: str, parser: argparse.ArgumentParser,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["bench", "room", *flags.split()])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err


def test_the_rows_are_every_table_count_for_every_layout(parser: argparse.ArgumentParser) -> None:
    args = parser.parse_args("bench room --tables 4,16,64 --layouts 1x1,2x2 --seconds 30 --idle 0".split())
    assert args.tables == (4, 16, 64)
    assert [(layout.instances, layout.stores) for layout in args.layouts] == [(1, 1), (2, 2)]
    assert args.idle == 0 and args.seconds == 30
    defaults = parser.parse_args(["bench", "room"])
    assert defaults.tables == (16,) and str(defaults.layouts[0]) == "1x1" and defaults.auth == "on"


def test_a_layout_may_name_its_postgresql_servers(parser: argparse.ArgumentParser) -> None:
    """``2x2x2``: 2 table-service instances x 2 stores x 2 servers; without a third
    number a layout keeps its meaning (every store on one server)."""
    args = parser.parse_args("bench room --layouts 1x1,2x2,2x2x2,2x4x3".split())
    assert [(lay.instances, lay.stores, lay.servers) for lay in args.layouts] == [
        (1, 1, 1), (2, 2, 1), (2, 2, 2), (2, 4, 3)]
    assert [str(lay) for lay in args.layouts] == ["1x1", "2x2", "2x2x2", "2x4x3"]
    assert parser.parse_args("bench room --layouts 2x2x1".split()).layouts == args.layouts[1:2]
