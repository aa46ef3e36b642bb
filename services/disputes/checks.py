"""A hand checked from the dealer's record alone: its deck (R32, domain/audit.py) and
every command re-run through the rules (rerun.py), with a verdict.

``check_hand`` checks one hand (the dispute replay); ``check_table`` checks hands of a
table one after the other, the commands between them included (``studroom verify``).
A hand's time is its first turn's clock under the settings in force at its start
(the floor may have changed the timers since the table opened).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import msgspec
from studroom.domain.audit import HandAudit, audit_hand
from studroom.domain.events import Event
from studroom.domain.hands import HandSpan, config_of, started_ms

from .rerun import Difference, Rerunner, Step


class HandCheck(msgspec.Struct, frozen=True):
    table_id: str
    span: HandSpan
    started_ms: int | None
    before: list[Step]               # commands re-run between the previous hand and this one
    steps: list[Step]                # the hand's own commands (the last one ends it)
    difference: Difference | None    # where the record and the re-run part, if they do
    deck: HandAudit | None           # the deck audit (R32); None: a cancelled hand dealt no card

    @property
    def consistent(self) -> bool:
        return self.difference is None and (self.deck is None or self.deck.fair)


def deck_audit(stream: Sequence[Event], span: HandSpan) -> HandAudit | None:
    """The deck audit of a played hand's events (a cancelled hand dealt no card)."""
    if span.cancelled or span.end is None:
        return None
    return audit_hand(stream[span.start:span.end])


def check_hand(stream: Sequence[Event], span: HandSpan) -> HandCheck:
    """Hand ``span`` of a table's whole ``stream``, re-run on the table as the record
    leaves it at the hand's start."""
    return next(check_table(stream, [span]))


def check_table(stream: Sequence[Event], hands: Sequence[HandSpan], start: int | None = None) -> Iterator[HandCheck]:
    """The finished ``hands`` of one table's ``stream`` (in order), each re-run with the
    commands since the previous one (the first with those since the stream's place
    ``start``, if given: a verified-through mark); after a difference the next hand
    starts again from the record."""
    table_id: str = stream[0].table_id  # type: ignore[attr-defined]
    rerun: Rerunner | None = None if start is None else Rerunner(stream, start)
    for span in hands:
        assert span.end is not None, "only finished hands are checked"
        if rerun is None or rerun.pos > span.start:
            rerun = Rerunner(stream, span.start)
        before, difference = rerun.run_until(span.start)
        config = rerun.table.config if difference is None else config_of(stream)
        assert config is not None
        steps: list[Step] = []
        if difference is None:
            steps, difference = rerun.run_until(span.end)
        if difference is not None:
            rerun = None
        yield HandCheck(table_id, span, started_ms(stream[span.start:span.end], config), before, steps,
                        difference, deck_audit(stream, span))
