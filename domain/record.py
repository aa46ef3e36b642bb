"""The base of the rules' mutable state objects (seats, hand players, the hand, decks).

They are plain objects with slots, listed in ``FIELDS`` (``Table.state()`` shows the
public ones).  The table deep-copies them for its snapshots; compiled (mypyc) classes
cannot be rebuilt by ``copy.deepcopy`` on its own, so each record says how to make a
blank one of itself (``_blank``) and the fields are copied into it.
"""

from __future__ import annotations

import copy
from typing import ClassVar


class Record:
    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()   # each subclass: its slots

    def _blank(self) -> Record:
        """A new object of the same class, whatever its fields (they are overwritten)."""
        raise NotImplementedError

    def __deepcopy__(self, memo: dict[int, object]) -> Record:
        new = self._blank()
        memo[id(self)] = new
        for name in self.FIELDS:
            setattr(new, name, copy.deepcopy(getattr(self, name), memo))
        return new
