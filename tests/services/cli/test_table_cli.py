"""``studroom table``'s options, without a room: what they make of a table's settings,
and the usage errors said in one line before anything is sent."""

from __future__ import annotations

import io

import msgspec
import pytest
from studroom.domain.config import Rake, Stakes, TableConfig
from studroom.domain.views import SeatView, TableView
from studroom.services.cli.main import build_parser, main
from studroom.services.cli.table import (
    UsageError,
    print_view,
    settings,
    settings_text,
    table_config,
)


def parsed(*argv: str) -> object:
    return build_parser(["table", *argv]).parse_args(["table", *argv])


def test_open_sends_the_options_given_and_the_domains_defaults_for_the_rest() -> None:
    args = parsed("open", "t1", "--game", "seven_card_stud", "--stakes", "10-20", "--ante", "1", "--rake", "2.5%",
                  "--rake-cap", "30", "--buy-in", "100-4000", "--turn-seconds", "12", "--seats", "6")
    assert table_config(args) == TableConfig(
        game="seven_card_stud", stakes=Stakes(small_bet=10, big_bet=20, ante=1), rake=Rake(basis_points=250, cap=30),
        seats=6, max_buy_in=4000, action_seconds=12)
    bare = table_config(parsed("open", "t1", "--game", "five_card_stud", "--stakes", "5/10"))
    assert bare == TableConfig(game="five_card_stud", stakes=Stakes(small_bet=5, big_bet=10))


def test_configure_changes_only_what_it_names() -> None:
    opened = TableConfig(game="seven_card_stud", stakes=Stakes(small_bet=10, big_bet=20, ante=1, bring_in=3),
                         rake=Rake(basis_points=500, cap=30), seats=6)
    changed = settings(opened, parsed("configure", "t1", "--stakes", "20-40", "--turn-seconds", "7"))
    assert changed == TableConfig(game="seven_card_stud", stakes=Stakes(small_bet=20, big_bet=40, ante=1, bring_in=3),
                                  rake=Rake(basis_points=500, cap=30), seats=6, action_seconds=7)
    assert settings(opened, parsed("configure", "t1")) == opened


def test_R3_a_minimum_buy_in_other_than_the_rules_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="200 .ten small bets, R3., not 100"):
        table_config(parsed("open", "t1", "--game", "seven_card_stud", "--stakes", "20-40", "--buy-in", "100-4000"))


@pytest.mark.parametrize("option", [("--stakes", "10:20"), ("--stakes", "10-20-40"), ("--rake", "2.555%"),
                                    ("--rake", "101%"), ("--rake", "five"), ("--buy-in", "1-2-3"),
                                    ("--seats", "0")])
def test_values_that_are_no_settings_are_refused_in_one_line(option: tuple[str, str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["table", "open", "t1", "--game", "seven_card_stud", "--stakes", "10-20", *option]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and repr(option[1]) in error


def test_the_settings_in_one_line() -> None:
    config = TableConfig(game="seven_card_stud", stakes=Stakes(small_bet=10, big_bet=20, ante=1),
                         rake=Rake(basis_points=250, cap=30), max_buy_in=4000, seats=6)
    assert settings_text(config) == ("seven_card_stud, stakes 10-20, ante 1, bring-in 5, rake 2.5% (at most 30), "
                                     "buy-in 100-4,000, turn 10 s, sat out at most 600 s, 6 seats")


def test_show_prints_the_tables_state_the_next_hands_settings_and_who_sits_out() -> None:
    config = TableConfig(game="five_card_stud", stakes=Stakes(small_bet=10, big_bet=20))
    view = TableView(table_id="t1", config=config, version=1234, hand_no=7, button=0, state="paused",
                     next_config=msgspec.structs.replace(config, action_seconds=20),
                     seats=[SeatView(0, "alice", 1500, False),
                            SeatView(1, "bob", 300, True, sitting_out_since_ms=1_796_000_000_000,
                                     sit_out_reason="timed_out")])
    out = io.StringIO()
    print_view(view, out)
    lines = out.getvalue().splitlines()
    assert lines[1] == ("t1: from the next hand five_card_stud, stakes 10-20, ante 0, bring-in 5, no rake, "
                        "buy-in 100-2,000, turn 20 s, sat out at most 600 s, 10 seats")
    assert lines[2] == "t1: paused, between hands, 7 played (version 1,234)"
    assert lines[-2].split() == ["0", "alice", "1,500", "in"]
    assert " ".join(lines[-1].split()) == "1 bob 300 sitting out since 00:53:20 UTC (timed out)"
