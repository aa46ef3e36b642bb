"""The ledger's reports as text and CSV (projections/ledger/text.py, reconcile_text.py)."""

from __future__ import annotations

from studroom.projections.ledger.table_audit import BOOKS_VS_STORE, Difference
from studroom.projections.ledger.reconcile import Line, Reconciliation
from studroom.projections.ledger.reconcile_text import render_reconciliation
from studroom.projections.ledger.sources import CASHIER_SCHEMA, cashier_source
from studroom.projections.ledger.text import day, moment, render


def test_a_text_table_aligns_figures_to_the_right_with_thousands_separated() -> None:
    out = render(["table", "rake"], [["t1", 1234], ["t10", 5]]).splitlines()
    assert out == ["table    rake", "─────────────", "t1      1,234", "t10         5"]


def test_csv_keeps_figures_plain_and_quotes_what_needs_it() -> None:
    assert render(["what", "n"], [["a, b", 1234], ["c", None]], as_csv=True) == 'what,n\n"a, b",1234\nc,'


def test_times_are_utc() -> None:
    assert day(1_764_600_000_000) == "2025-12-01" and moment(0) == "1970-01-01 00:00:00" and day(None) == ""


EQUATION = [Line("deposits", 1000), Line("operator credits", 0), Line("withdrawals", 100),
            Line("account balances", 500, 500), Line("chips in transit", 0, 0), Line("chips on the tables", 390, 390),
            Line("rake", 10, 10), Line("the world's balance", -900)]


def test_a_clean_reconciliation_prints_the_equation_and_no_differences() -> None:
    text = render_reconciliation(Reconciliation(equation=EQUATION), [cashier_source()], "studroom_ledger")
    assert "1,000 + 0 = 100 + 500 + 0 + 390 + 10: holds" in text
    assert text.endswith("no differences") and CASHIER_SCHEMA in text


def test_each_difference_is_listed_with_its_hand_and_event() -> None:
    found = Difference(BOOKS_VS_STORE, "the books hold call 21", "t1", 4, "ann", "studroom_p0 t1 v88 (Acted)", 0)
    result = Reconciliation(differences=[found], equation=EQUATION)
    text = render_reconciliation(result, [], "studroom_ledger")
    assert "1 differences:" in text and "t1#4" in text and "studroom_p0 t1 v88 (Acted)" in text
    csv = render_reconciliation(result, [], "studroom_ledger", as_csv=True).splitlines()
    assert csv[0] == "check,table,hand,player,event,when (UTC),what,books,domain"
    assert csv[1] == "equation,,,,,,deposits,1000," and len(csv) == 1 + len(EQUATION) + 1
    assert csv[-1].startswith("books vs store,t1,4,ann,studroom_p0 t1 v88 (Acted),1970-01-01 00:00:00,")
