"""Answering history requests: who may ask about whom, and the answer from the database.

A player asks about himself only; an operator about anyone; nobody else asks.  The
sender comes from the subject the request arrived on (service.py), never the body.
"""

from __future__ import annotations

from typing import Any

import msgspec
import psycopg
from studroom.domain.errors import FORBIDDEN
from studroom.domain.names import is_name
from studroom.services.wire.protocol import BAD_REQUEST, UNAVAILABLE, UNKNOWN_HAND

from . import phh, queries, text
from .protocol import (
    Hand,
    Hands,
    HistoryReply,
    HistoryRequest,
    Sessions,
    decode_request,
    refused,
)
from .schema import HISTORY_SCHEMA, create


class Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def player_asked_about(role: str, name: str, request: HistoryRequest) -> str:
    """Whose history ``name`` (of ``role``) may have: the player the request names."""
    wanted = request.player
    if role == "player":
        if wanted is not None and wanted != name:
            raise Refused(FORBIDDEN, f"player {name} may see his own history only, not {wanted}'s")
        return name
    if role == "operator":
        if wanted is None or not is_name(wanted):
            raise Refused(BAD_REQUEST, "an operator names the player whose history he asks for")
        return wanted
    raise Refused(FORBIDDEN, f"a {role} asks for no history")


class HistoryDesk:
    """Answers requests from the histories in ``schema`` (one connection, thread-safe)."""

    def __init__(self, database_url: str, schema: str = HISTORY_SCHEMA) -> None:
        self.database_url = database_url
        self.schema = schema
        self._conn: psycopg.Connection[Any] | None = None

    def answer(self, role: str, name: str, body: bytes) -> HistoryReply:
        try:
            request = decode_request(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            return refused(BAD_REQUEST, f"not a history request: {str(e)[:200]}")
        try:
            player = player_asked_about(role, name, request)
            return self._answer_once_more_if_dropped(player, request)
        except Refused as e:
            return refused(e.code, str(e))

    def _answer_once_more_if_dropped(self, player: str, request: HistoryRequest) -> HistoryReply:
        """A connection PostgreSQL dropped (a restart, a terminated backend) shows only
        when used: it is opened again once; a database still away is ``unavailable``
        (the asker's client retries it), never a request left unanswered."""
        try:
            return self._answer(player, request)
        except psycopg.OperationalError:
            self.close()
        try:
            return self._answer(player, request)
        except psycopg.OperationalError as e:
            self.close()
            raise Refused(UNAVAILABLE, f"the histories cannot be read now: {str(e)[:200]}") from e

    def _answer(self, player: str, request: HistoryRequest) -> HistoryReply:
        conn = self._connection()
        if isinstance(request, Hands):
            found = queries.hands(conn, player, table_id=request.table_id, before_ms=request.before_ms,
                                  limit=request.limit, schema=self.schema)
            return HistoryReply(ok=True, hands=found)
        if isinstance(request, Sessions):
            sittings, totals = queries.sessions(conn, player, schema=self.schema)
            return HistoryReply(ok=True, sessions=sittings, totals=totals)
        assert isinstance(request, Hand)
        record = queries.hand(conn, player, request.table_id, request.hand_no, schema=self.schema)
        if record is None:
            raise Refused(UNKNOWN_HAND, f"{player} played no hand {request.hand_no} at {request.table_id[:64]}")
        if request.format == "text":
            return HistoryReply(ok=True, text=text.render(record, request.lang))
        if request.format == "phh":
            return HistoryReply(ok=True, text=phh.render(record))
        return HistoryReply(ok=True, record=record)

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(self.database_url, autocommit=True)
            create(self._conn, self.schema)
        return self._conn

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
