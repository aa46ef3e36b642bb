"""The base of the rules' mutable state objects (seats, hand players, the hand).

They are plain objects with slots.  What a copy of one holds is spelled out here,
because the compiled domain (mypyc) builds classes that ``copy.deepcopy`` cannot read
by itself; the table deep-copies them for its snapshots, and ``Table.state()`` lists
the same fields.
"""

from __future__ import annotations

from typing import ClassVar

from mypy_extensions import mypyc_attr


@mypyc_attr(serializable=True)
class Record:
    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()   # each subclass: its slots

    def __getstate__(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.FIELDS}

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
