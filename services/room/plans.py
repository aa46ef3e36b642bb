"""Which tables the room plays on and whom it seats: new tables in turn of the games,
tables found in the store reused with their players."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from studroom.domain import simulate
from studroom.domain.config import Rake, TableConfig
from studroom.domain.events import Event
from studroom.domain.games import GAMES
from studroom.domain.table import Table

ROOM_GAMES = ("seven_card_stud", "seven_card_stud_hilo", "five_card_stud")
ROOM_RAKE = Rake(basis_points=500, cap=30)          # 5 %, at most 30 chips a hand


def table_ids(count: int, prefix: str = "t") -> list[str]:
    """``t01`` .. ``tNN`` (wider when there are more)."""
    width = max(2, len(str(count)))
    return [f"{prefix}{i:0{width}d}" for i in range(1, count + 1)]


def table_config(index: int) -> TableConfig:
    game = ROOM_GAMES[index % len(ROOM_GAMES)]
    return TableConfig(game=game, stakes=simulate.STAKES, rake=ROOM_RAKE)


def player_name(table_id: str, seat: int) -> str:
    return f"{table_id}-p{seat}"


@dataclass
class TablePlan:
    table_id: str
    config: TableConfig
    seats: dict[int, str]                       # seat -> player to run a bot for
    kept: set[int] = field(default_factory=set)    # seats already held (their bots look up their stacks)
    reused: bool = False                        # open in the store already: not opened again


def plan_tables(ids: Sequence[str], bots_per_table: int,
                existing: dict[str, list[Event]]) -> list[TablePlan]:
    """What to open and whom to seat; tables found in the store are reused, with a
    bot for every seat already taken (so no hand waits on a player nobody plays)."""
    plans = []
    for index, table_id in enumerate(ids):
        events = existing.get(table_id)
        table = Table.replay(events) if events else None
        if table is not None and table.config is not None:
            config = table.config
            seats = {s: st.player for s, st in table.seats.items() if not st.leaving}
            kept = set(seats)
        else:
            config, seats, kept = table_config(index), {}, set()
        limit = min(config.seat_count, GAMES[config.game].max_seats)
        for seat in range(config.seat_count):
            if len(seats) >= min(max(bots_per_table, len(kept)), limit):
                break
            seats.setdefault(seat, player_name(table_id, seat))
        plans.append(TablePlan(table_id, config, dict(sorted(seats.items())), kept, reused=table is not None))
    return plans


def kept_beyond(plans: Sequence[TablePlan], bots_per_table: int) -> str | None:
    """Why some tables seat more bots than asked, or None: a reused table keeps the
    players seated there (each gets a bot), since a hand would wait on a player nobody plays."""
    over = [p for p in plans if len(p.kept) > bots_per_table]
    if not over:
        return None
    tables = ", ".join(f"{p.table_id} ({len(p.kept)})" for p in over)
    return (f"--bots-per-table {bots_per_table}: the players seated at {tables} in the data folder keep their "
            f"seats, each played by a bot so that no hand waits on a player nobody plays; "
            f"new tables seat {bots_per_table} (a new --data-dir starts afresh)")


# the most bots every table of the room seats (a game's seats, or fewer by its configuration)
MAX_BOTS_PER_TABLE = min(min(table_config(i).seat_count, GAMES[table_config(i).game].max_seats)
                         for i in range(len(ROOM_GAMES)))
