"""Reading a player's history: his hands, one hand as he may see it, his sessions.

A session is one sitting at one table (from his sit-down to his leaving), so it has
one game and one pair of stakes; the totals add his sessions up per game and stakes.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import psycopg
from psycopg import sql
from studroom.domain.hand_record import HandRecord

from .schema import HISTORY_SCHEMA

MOST_HANDS: Final = 500          # hands in one answer (ask again with ``before_ms``)


class HandSummary(msgspec.Struct, frozen=True):
    table_id: str
    hand_no: int
    played_ms: int | None
    game: str
    small_bet: int
    big_bet: int
    seat: int
    net: int
    won: int
    pots_won: int
    rake_paid: int
    showdown: bool


class Session(msgspec.Struct, frozen=True):
    table_id: str
    game: str
    small_bet: int
    big_bet: int
    first_ms: int | None
    last_ms: int | None
    hands: int
    net: int
    won: int
    rake_paid: int


class StakesTotal(msgspec.Struct, frozen=True):
    game: str
    small_bet: int
    big_bet: int
    sessions: int
    hands: int
    net: int
    rake_paid: int


def hands(conn: psycopg.Connection[Any], player: str, *, table_id: str | None = None, before_ms: int | None = None,
          limit: int = 50, schema: str = HISTORY_SCHEMA) -> list[HandSummary]:
    """His hands, the latest first (those played before ``before_ms``, at ``table_id``)."""
    query = sql.SQL(
        "SELECT table_id, hand_no, played_ms, game, small_bet, big_bet, seat, net, won, pots_won, rake_paid, showdown "
        "FROM {}.hands WHERE player = %s AND (%s::text IS NULL OR table_id = %s) "
        "AND (%s::bigint IS NULL OR played_ms < %s) ORDER BY played_ms DESC NULLS LAST, table_id, hand_no DESC LIMIT %s"
    ).format(sql.Identifier(schema))
    rows = conn.execute(query, (player, table_id, table_id, before_ms, before_ms, min(limit, MOST_HANDS))).fetchall()
    return [HandSummary(*row) for row in rows]


def hand(conn: psycopg.Connection[Any], player: str, table_id: str, hand_no: int,
         schema: str = HISTORY_SCHEMA) -> HandRecord | None:
    """Hand ``hand_no`` at ``table_id`` as ``player`` may see it (None: not his)."""
    query = sql.SQL("SELECT record FROM {}.hands WHERE player = %s AND table_id = %s AND hand_no = %s").format(
        sql.Identifier(schema))
    row = conn.execute(query, (player, table_id, hand_no)).fetchone()
    return None if row is None else msgspec.json.decode(row[0], type=HandRecord)


def sessions(conn: psycopg.Connection[Any], player: str,
             schema: str = HISTORY_SCHEMA) -> tuple[list[Session], list[StakesTotal]]:
    """His sessions (the latest first) and their totals per game and stakes."""
    query = sql.SQL(
        "SELECT table_id, game, small_bet, big_bet, min(played_ms), max(played_ms), count(*), sum(net)::bigint, "
        "sum(won)::bigint, sum(rake_paid)::bigint FROM {}.hands WHERE player = %s GROUP BY table_id, session, game, small_bet, big_bet "
        "ORDER BY max(played_ms) DESC NULLS LAST, table_id"
    ).format(sql.Identifier(schema))
    found = [Session(*row) for row in conn.execute(query, (player,)).fetchall()]
    totals: dict[tuple[str, int, int], StakesTotal] = {}
    for s in found:
        key = (s.game, s.small_bet, s.big_bet)
        t = totals.get(key, StakesTotal(s.game, s.small_bet, s.big_bet, 0, 0, 0, 0))
        totals[key] = StakesTotal(t.game, t.small_bet, t.big_bet, t.sessions + 1, t.hands + s.hands, t.net + s.net,
                                  t.rake_paid + s.rake_paid)
    return found, sorted(totals.values(), key=lambda t: (t.game, t.small_bet, t.big_bet))
