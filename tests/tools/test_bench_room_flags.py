"""``studroom bench room`` picks its rows from its flags: lists of table counts and of
instances x stores; a bad value is one line on stderr and exit code 2 (nothing starts)."""

from __future__ import annotations

import argparse

import pytest
from studroom.services.cli.main import build_parser


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()


@pytest.mark.parametrize("flags", ["--tables 0", "--tables 4,x", "--tables ,", "--layouts 2", "--layouts 0x1",
                                   "--layouts 1x", "--idle -1", "--seconds 0", "--auth maybe"])
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
