"""A closed day's report as a person reads it (text), a spreadsheet takes it (CSV: one
figure a line: section, name, figure, value) or a program (JSON: :meth:`.seal.Seal.report`)."""

from __future__ import annotations

import json
from typing import Final

from .seal import PLAYERS, RAKE, TOTALS, Seal
from .text import render

FORMATS: Final = ("text", "csv", "json")


def render_seal(seal: Seal, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(seal.report(), indent=2)
    sections = (("totals", TOTALS, seal.totals), ("rake", RAKE, seal.rake), ("players", PLAYERS, seal.players))
    if fmt == "csv":                # long: one figure a line
        rows = [[name, row[0], column, value] for name, header, rows in sections for row in rows
                for column, value in zip(header[1:], row[1:], strict=True)]
        rows += [["digest", seal.day.isoformat(), "entries", seal.entries],
                 ["digest", seal.day.isoformat(), "sha-256", seal.digest]]
        return render(["section", "name", "figure", "value"], rows, as_csv=True)
    out = [f"the books of {seal.day} (UTC): {seal.entries:,} entries, SHA-256 {seal.digest}"]
    for name, header, rows in sections:
        out += ["", f"{name}:", render(header, rows)]
    return "\n".join(out)
