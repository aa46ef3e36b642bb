"""Re-running a table's record through the domain, command by command.

A fresh table is replayed from the stored events up to a place of the stream (event
sourcing: ``Table.replay``); from there each stored command (commands.py) is given to
it again, as its sender, with its id and clock, and the events the rules make of it
must be the stored ones, field for field.  The first place where they are not is the
:class:`Difference`: a stored event the rules never made there (a changed card, a
changed amount, events in another order, one added or missing), or a stored command
the rules refuse.  After a difference the re-run stops: what follows was decided on
a state the record and the rules no longer share (``resync`` starts again from the
record further on).  A ``Rerunner`` stopped at a difference must be resynced before
it runs on.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from studroom.domain.authority import Sender
from studroom.domain.commands import TableCommand
from studroom.domain.errors import DomainError
from studroom.domain.events import Event, TableEvent
from studroom.domain.table import Table

from .causes import Candidate, candidates
from .differences import describe, fields_that_differ


class Step(msgspec.Struct, frozen=True):
    """One command of the record, re-run: it made ``stream[start:start + count]``."""

    command: TableCommand
    by: Sender | None
    start: int
    count: int


class Difference(msgspec.Struct, frozen=True):
    """Where the record and the re-run part: the stream's place ``index`` (its event
    version is ``index + 1``)."""

    index: int
    recorded: TableEvent | None         # None: the record ends here
    rerun: TableEvent | None            # None: the rules make nothing here
    why: str
    details: list[str] = []


class Rerunner:
    """Re-runs ``stream`` from ``start`` on (the table replayed up to there)."""

    def __init__(self, stream: Sequence[Event], start: int) -> None:
        self.stream = stream
        self.resync(start)

    def resync(self, index: int) -> None:
        """Carry on from the record's place ``index`` (the table replayed up to it)."""
        self.table = Table.replay(self.stream[:index])
        self.pos = index

    def run_until(self, stop: int) -> tuple[list[Step], Difference | None]:
        """Re-run commands until the stream's place ``stop`` is passed: the steps, and
        the difference that stopped them, if any."""
        steps: list[Step] = []
        while self.pos < stop:
            outcome = self._step()
            if isinstance(outcome, Difference):
                return steps, outcome
            steps.append(outcome)
        return steps, None

    def _step(self) -> Step | Difference:
        """Re-run the command behind the next stored event.  Where the event leaves a
        choice, the candidates are tried in turn; a candidate that does not give the
        record leaves the table as the record has it again (replayed: the choice is rare,
        so a copy of the table before each try would cost more)."""
        i = self.pos
        found = candidates(self.stream, i, self.table)
        if not found:
            return Difference(i, self.stream[i], None,  # type: ignore[arg-type]
                              f"no command begins with {type(self.stream[i]).__name__}: the rules never emit it here")
        first: Difference | None = None
        for n, candidate in enumerate(found):
            if n:
                self.resync(i)
            outcome = self._try(self.table, candidate)
            if not isinstance(outcome, Difference):
                self.pos = i + outcome.count
                return outcome
            first = first or outcome
        assert first is not None
        return first

    def _try(self, table: Table, candidate: Candidate) -> Step | Difference:
        i = self.pos
        try:
            made = table.execute(candidate.command, candidate.by)
        except DomainError as refused:
            who = "the room" if candidate.by is None else candidate.by.key
            return Difference(i, self.stream[i], None,  # type: ignore[arg-type]
                              f"the record has {describe(self.stream[i])}, but the rules refuse the command "
                              f"behind it, {describe(candidate.command)} from {who}: {refused.code}: {refused.message}")
        for j, event in enumerate(made):
            recorded = self.stream[i + j] if i + j < len(self.stream) else None
            if recorded != event:
                return _difference(i + j, recorded, event)
        return Step(candidate.command, candidate.by, i, len(made))  # type: ignore[arg-type]


def _difference(index: int, recorded: Event | None, rerun: Event) -> Difference:
    if recorded is None:
        return Difference(index, None, rerun, f"the record ends; the rules go on with {describe(rerun)}")  # type: ignore[arg-type]
    return Difference(index, recorded, rerun,  # type: ignore[arg-type]
                      f"the record has {describe(recorded)}; the rules make {describe(rerun)}",
                      fields_that_differ(recorded, rerun))
