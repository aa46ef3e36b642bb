"""From a table's events to the players' history rows (pure).

:func:`follow` folds one event into what the projection keeps of a table between
events (:class:`TableState`: its settings, who sits where since when, where the running
hand began; the floor's new settings hold from the next hand, at once between hands); when a hand ends it says where the hand began, and :func:`hand_rows`
makes the hand's rows: one per player dealt in, with his result and the hand as he
may see it.  A player's sitting at a table (his session) is named by the stream
version of his sit-down there.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from studroom.domain import views
from studroom.domain.config import TableConfig
from studroom.domain.events import (
    Event,
    HandCancelled,
    HandEnded,
    HandStarted,
    PlayerLeft,
    PlayerSatDown,
    TableConfigured,
    TableOpened,
)
from studroom.domain.hand_record import HandRecord, make_record
from studroom.domain.hands import started_ms

from .results import Result, results


class Sitting(msgspec.Struct, frozen=True):
    player: str
    since: int                      # the stream version of his sit-down


class TableState(msgspec.Struct):
    table_id: str = ""
    config: TableConfig | None = None
    seated: dict[int, Sitting] = {}
    hand_start: int | None = None   # the version of the running hand's HandStarted
    seated_at_start: dict[int, str] = {}
    next_config: TableConfig | None = None   # the floor's settings given during a hand: for the next one


class HandRow(msgspec.Struct, frozen=True):
    """One player's hand: the columns of schema.HAND_COLUMNS but the store."""

    player: str
    table_id: str
    hand_no: int
    version: int                    # the HandEnded's stream version
    played_ms: int | None
    game: str
    small_bet: int
    big_bet: int
    ante: int
    seat: int
    session: int
    result: Result
    record: HandRecord


def follow(state: TableState, version: int, event: Event) -> int | None:
    """Fold ``event`` (stream ``version``) in; for a ``HandEnded``, the version its hand
    began at (its events are then versions ``start..version``), else None."""
    kind = type(event)
    if kind is TableOpened:
        state.table_id, state.config = event.table_id, event.config  # type: ignore[attr-defined]
    elif kind is PlayerSatDown:
        state.seated[event.seat] = Sitting(event.player, version)  # type: ignore[attr-defined]
    elif kind is PlayerLeft:
        state.seated.pop(event.seat, None)  # type: ignore[attr-defined]
    elif kind is TableConfigured:
        _configured(state, event)  # type: ignore[arg-type]
    elif kind is HandStarted:
        if state.next_config is not None:
            state.config, state.next_config = state.next_config, None
        state.hand_start = version
        state.seated_at_start = {seat: s.player for seat, s in state.seated.items()}
    elif kind is HandCancelled:
        state.hand_start = None
    elif kind is HandEnded:
        start, state.hand_start = state.hand_start, None
        return start
    return None


def _configured(state: TableState, event: TableConfigured) -> None:
    """The floor's new settings: the hand in play keeps its own (domain/table.py)."""
    if state.hand_start is None:
        state.config, state.next_config = event.config, None
    else:
        state.next_config = event.config


def hand_rows(state: TableState, hand: Sequence[Event], version: int) -> list[HandRow]:
    """The rows of a played hand (its events ``HandStarted`` .. ``HandEnded``, the last
    at stream ``version``), for each player dealt in."""
    config = state.config
    assert config is not None, "a table's stream begins with TableOpened"
    when = started_ms(hand, config)
    stakes = config.stakes
    public = [views.public(e) for e in hand]
    rows = []
    for result in results(hand):
        sitting = state.seated.get(result.seat)
        session = sitting.since if sitting is not None and sitting.player == result.player else version
        record = make_record(state.table_id, config, state.seated_at_start, hand, result.seat, public=public)
        rows.append(HandRow(
            player=result.player, table_id=state.table_id, hand_no=record.hand_no, version=version, played_ms=when,
            game=config.game, small_bet=stakes.small_bet, big_bet=stakes.big_bet, ante=stakes.ante, seat=result.seat,
            session=session, result=result, record=record,
        ))
    return rows
