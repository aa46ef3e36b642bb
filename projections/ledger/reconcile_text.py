"""A reconciliation as a person reads it (text) or a spreadsheet takes it (CSV)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from studroom.services.runtime.text import number

from .reconcile import Reconciliation, equation_holds
from .text import moment, render

_COLUMNS = ["check", "table", "hand", "player", "event", "when (UTC)", "what", "books", "domain"]


def render_reconciliation(result: Reconciliation, sources: Sequence[Any], ledger_schema: str, *,
                          as_csv: bool = False) -> str:
    """The equation (when everything was reconciled), the verdict and the differences.
    CSV: one table, the equation's figures first (check "equation"), then the
    differences."""
    differences = [[d.check, d.table, d.hand, d.player, d.event, moment(d.at_ms), d.what, None, None]
                   for d in result.differences]
    if as_csv:
        figures = [["equation", None, None, None, None, "", line.name, line.books, line.domain]
                   for line in result.equation]
        return render(_COLUMNS, figures + differences, as_csv=True)
    stores = ", ".join(source.name for source in sources)
    out = [(f"reconciled {result.tables:,} tables, {result.hands:,} hands, {result.events:,} table events "
            f"(stores {stores}) against the books in {ledger_schema}")]
    if result.equation:
        out += ["", render(["", "books", "domain"], [[line.name, line.books, line.domain] for line in result.equation])]
        f = {line.name: number(line.books) for line in result.equation}
        verdict = "holds" if equation_holds(result.equation) else "DOES NOT HOLD"
        out += ["", ("deposits + operator credits = withdrawals + account balances + chips in transit "
                     "+ chips on the tables + rake"),
                (f"{f['deposits']} + {f['operator credits']} = {f['withdrawals']} + {f['account balances']} + "
                 f"{f['chips in transit']} + {f['chips on the tables']} + {f['rake']}: {verdict}")]
    if not result.differences:
        return "\n".join([*out, "", "no differences"])
    rows = [[d.check, f"{d.table}#{d.hand}" if d.hand is not None else "", d.event or d.table or d.player, d.what]
            for d in result.differences]
    return "\n".join([*out, "", f"{len(result.differences)} differences:",
                      render(["check", "hand", "event", "what"], rows)])
