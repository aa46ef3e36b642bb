"""``studroom cashier ...`` (services/cli/cashier.py) without servers: the commands
parse, and an account's movements print as a statement (text and CSV) whose running
balance is the account's."""

from __future__ import annotations

import argparse
import csv
import io

from studroom.domain.account import Account
from studroom.services.wire.cashier_protocol import CashierReply, Movement
from studroom.services.cli.cashier import (
    HEADER,
    _print_movements,
    add_commands,
    movement_rows,
)

NOON = 1_764_590_400_000          # 2025-12-01 12:00:00 UTC


def movements() -> tuple[Account, list[Movement]]:
    account = Account("alice")
    events = [account.deposit(5000, "wire-1", "floor", NOON),
              account.reserve("t01", 3, 1000, "77", "1", NOON + 1000),
              account.confirm("t01", "77", NOON + 2000),
              account.reserve("t01", 3, 1000, "78", "2", NOON + 3000),
              account.refund("t01", "78", "hand_in_progress", NOON + 4000),
              account.cash_out("t01", 120, 3, 1450, NOON + 5000),
              account.withdraw(400, "payout-1", "cage", NOON + 6000)]
    return account, [Movement(version, event) for version, event in enumerate(events, start=1)  # type: ignore[arg-type]
                     if event is not None]


def test_the_commands_parse() -> None:
    parser = argparse.ArgumentParser(prog="studroom")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["cashier", "deposit", "alice", "5000", "--reference", "wire-1"])
    assert (args.cashier, args.player, args.amount, args.reference, args.operator) == (
        "deposit", "alice", 5000, "wire-1", "floor")
    args = parser.parse_args(["cashier", "movements", "alice", "--csv", "--as", "cage"])
    assert (args.cashier, args.csv, args.operator) == ("movements", True, "cage")
    assert callable(args.run)


def test_a_statement_runs_the_balance_of_the_account() -> None:
    account, moved = movements()
    rows = movement_rows(moved)
    assert [row[2] for row in rows] == ["Deposited", "BuyInReserved", "BuyInConfirmed", "BuyInReserved",
                                        "BuyInRefunded", "CashedOut", "Withdrawn"]
    assert [int(row[3]) for row in rows] == [5000, -1000, 0, -1000, 1000, 1450, -400]
    assert int(rows[-1][4]) == account.balance == 5050
    assert rows[0][1] == "2025-12-01 12:00:00" and rows[0][6] == "wire-1"
    assert rows[4][5:] == ["t01", "hand_in_progress"] and rows[2][6] == "seat 3"


def test_a_statement_prints_as_text_or_csv() -> None:
    _, moved = movements()
    reply = CashierReply(ok=True, player="alice", movements=moved)
    text, table = io.StringIO(), io.StringIO()
    _print_movements(reply, argparse.Namespace(player="alice", csv=False), text)
    _print_movements(reply, argparse.Namespace(player="alice", csv=True), table)
    lines = text.getvalue().splitlines()
    assert lines[0].split()[:3] == ["version", "time", "(UTC)"] and lines[-1] == "alice: 7 movements"
    assert lines[2].split()[:5] == ["1", "2025-12-01", "12:00:00", "Deposited", "5,000"]
    parsed = list(csv.reader(io.StringIO(table.getvalue())))
    assert parsed[0] == HEADER and parsed[1:] == [["" if v is None else str(v) for v in row]
                                                  for row in movement_rows(moved)]
