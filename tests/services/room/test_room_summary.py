"""The room's summary says what happened, never more: no tables played is said so (and
the exit code is 1), nothing measured is not a latency, no table is no chip check;
services started again are counted. No servers."""

from __future__ import annotations

from studroom.projections.ledger.conservation import ChipCheck
from studroom.services.room.room import RoomOptions, RoomResult, _summary, exit_code

OPTIONS = RoomOptions(tables=2, bots_per_table=2, seconds=5, instances=1, stores=1, pace_ms=0, progress=False,
                      timers=False)


def _result(not_played: str | None = None, latencies: tuple[float, ...] = (0.002, 0.004),
            restarts: dict[str, int] | None = None) -> RoomResult:
    return RoomResult(seconds=0.0 if not_played else 5.0, tables=2, bots=4, hands=0 if not_played else 10,
                      actions=0, commands=0, errors=0, stale=0, latencies=list(latencies), error_codes={},
                      not_played=not_played, restarts=restarts or {})


def _said(result: RoomResult | None, chips: ChipCheck, problems: list[str] | None = None) -> str:
    lines: list[str] = []
    _summary(lines.append, result, 0, 0, chips, problems or [], OPTIONS)
    return "\n".join(lines)


def test_no_tables_played_is_said_and_fails() -> None:
    result = _result("the tables were not open within 5 s (0 of 2 tables open)")
    said = _said(result, ChipCheck())
    assert "no tables played: the tables were not open within 5 s" in said
    assert "chips conserved" not in said and "nothing to check" in said
    assert "latency" not in said
    assert exit_code(result, ChipCheck(), []) == 1


def test_a_store_of_earlier_runs_is_checked_but_a_run_that_did_not_play_still_fails() -> None:
    chips = ChipCheck(tables=2, bought=100, behind=100)
    said = _said(_result("stopped before the tables were open (1 of 2 tables open)"), chips)
    assert "chips conserved: yes" in said and "no tables played" in said
    assert exit_code(_result("stopped"), chips, []) == 1


def test_a_room_that_played_conserved_and_restarted_a_service() -> None:
    chips = ChipCheck(tables=2, bought=100, behind=90, rake=10)
    result = _result(restarts={"room-relay": 2})
    said = _said(result, chips)
    assert "latency      p50 " in said and "chips conserved: yes" in said
    assert "restarts     room-relay 2" in said
    assert exit_code(result, chips, []) == 0
    assert exit_code(result, chips, ["room-relay exited with 1"]) == 1


def test_nothing_measured_is_no_latency() -> None:
    said = _said(_result(latencies=()), ChipCheck(tables=1))
    assert "latency      none measured" in said and "nan" not in said
