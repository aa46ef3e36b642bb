"""Asking the lobby: the request and its answer on ``studroom.lobby.query`` (anyone may
ask: players, operators, the public spectator), and which entries answer it.  Pure.

    {}                                   every table (without the running hand)
    {"game": "five_card_stud", "stakes": "20/40"}    those of this game and these stakes
    {"table": "t1"}                      one table, its running hand included

An answer is ``{"ok": true, "tables": [...]}`` (LobbyEntry values, their figures as of
the answer) or ``{"ok": false, "error": {"code": ..., "message": ...}}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final

import msgspec
from studroom.domain.config import Stakes
from studroom.domain.errors import UNKNOWN_GAME
from studroom.domain.games import GAMES
from studroom.domain.names import is_name
from studroom.services.wire.protocol import BAD_REQUEST, UNKNOWN_TABLE, ErrorBody

from .activity import figures
from .entry import LobbyEntry

MAX_QUERY_BYTES: Final = 1024
_STAKES: Final = re.compile(r"[0-9]{1,10}/[0-9]{1,10}")


class LobbyQuery(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    table: str | None = None      # one table, with its running hand
    game: str | None = None       # only tables of this game
    stakes: str | None = None     # only tables of these stakes: "small/big" bet, e.g. "20/40"


class LobbyAnswer(msgspec.Struct, frozen=True, omit_defaults=True):
    ok: bool
    tables: list[LobbyEntry] = []
    error: ErrorBody | None = None


class BadQuery(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


_query_decoder = msgspec.json.Decoder(LobbyQuery)
_answer_decoder = msgspec.json.Decoder(LobbyAnswer)
_encoder = msgspec.json.Encoder()


def stakes_label(stakes: Stakes) -> str:
    """How the lobby names stakes: small bet / big bet."""
    return f"{stakes.small_bet}/{stakes.big_bet}"


def encode_query(query: LobbyQuery) -> bytes:
    return _encoder.encode(query)


def decode_query(data: bytes) -> LobbyQuery:
    """The query in ``data``; :class:`BadQuery` for anything else (empty: every table)."""
    if len(data) > MAX_QUERY_BYTES:
        raise BadQuery(BAD_REQUEST, f"a query is at most {MAX_QUERY_BYTES} bytes")
    try:
        query = _query_decoder.decode(data or b"{}")
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise BadQuery(BAD_REQUEST, f"not a lobby query: {str(e)[:80]}") from None
    if query.table is not None and not is_name(query.table):
        raise BadQuery(BAD_REQUEST, "a table id is 1..64 letters, digits, '_' or '-'")
    if query.game is not None and query.game not in GAMES:
        raise BadQuery(UNKNOWN_GAME, f"games: {', '.join(GAMES)}")
    if query.stakes is not None and not _is_stakes(query.stakes):
        raise BadQuery(BAD_REQUEST, "stakes are small bet/big bet, e.g. 20/40")
    return query


def _is_stakes(text: str) -> bool:
    return _STAKES.fullmatch(text) is not None


def select(entries: Iterable[LobbyEntry], query: LobbyQuery, now_ms: int,
           served: Callable[[str], bool] = lambda table_id: True) -> list[LobbyEntry]:
    """The entries that answer ``query``, by table id; in a list, without the running
    hand and the buckets behind the figures, so the figures are computed here.  A table
    ``served`` (a table service holds it) has its figures as of ``now_ms``; one that is
    not (a stopped room's, or whose service is down) keeps those of its last event: its
    last hour of play, where as of now they would say only that it stopped.  Raises
    :class:`BadQuery` (``unknown_table``) for a table the lobby does not know."""
    chosen = sorted((e for e in entries if matches(e, query)), key=lambda e: e.table_id)
    if query.table is not None and not chosen:
        raise BadQuery(UNKNOWN_TABLE, f"the lobby knows no table {query.table}")
    full = query.table is not None
    return [_as_answered(e, served(e.table_id), now_ms, full) for e in chosen]


def _as_answered(entry: LobbyEntry, served: bool, now_ms: int, full: bool) -> LobbyEntry:
    return msgspec.structs.replace(entry, served=served, figures=figures(entry, now_ms) if served else entry.figures,
                                   **({} if full else {"hand": None, "activity": []}))


def matches(entry: LobbyEntry, query: LobbyQuery) -> bool:
    return ((query.table is None or entry.table_id == query.table)
            and (query.game is None or entry.game == query.game)
            and (query.stakes is None or stakes_label(entry.stakes) == query.stakes))


def answer(entries: Iterable[LobbyEntry], data: bytes, now_ms: int,
           served: Callable[[str], bool] = lambda table_id: True) -> bytes:
    """The encoded answer to the request ``data``."""
    try:
        result = LobbyAnswer(ok=True, tables=select(entries, decode_query(data), now_ms, served))
    except BadQuery as e:
        result = LobbyAnswer(ok=False, error=ErrorBody(e.code, str(e)))
    return _encoder.encode(result)


def decode_answer(data: bytes) -> LobbyAnswer:
    return _answer_decoder.decode(data)
