"""A table's last hour in five-minute buckets, and the figures from it."""

from __future__ import annotations

from studroom.domain.simulate import STAKES
from studroom.projections.lobby.activity import (
    BUCKET_MS,
    BUCKETS,
    HOUR_MS,
    count_hand,
    count_timeout,
    figures,
)
from studroom.projections.lobby.entry import Bucket, LobbyEntry, SeatRow

T0 = 1_764_000_000_000 - 1_764_000_000_000 % BUCKET_MS


def entry(activity: list[Bucket]) -> LobbyEntry:
    return LobbyEntry(table_id="t", game="seven_card_stud", stakes=STAKES, seats=10, max_players=8,
                      min_buy_in=200, max_buy_in=4000, players=[SeatRow(0, "a"), SeatRow(3, "b")],
                      activity=activity)


def test_facts_of_five_minutes_share_a_bucket_and_an_entry_keeps_an_hour() -> None:
    activity: list[Bucket] = []
    for minute in range(0, 3 * 60, 1):                    # three hours, a hand a minute
        count_hand(activity, T0 + minute * 60_000, pot=100, dealt=4, saw_fourth=2)
    assert len(activity) == BUCKETS == 12
    assert [b.hands for b in activity] == [5] * 12
    assert activity[-1].start_ms - activity[0].start_ms == HOUR_MS - BUCKET_MS


def test_a_fact_older_than_the_hour_kept_is_dropped_and_a_late_one_finds_its_bucket() -> None:
    activity: list[Bucket] = []
    count_hand(activity, T0 + HOUR_MS + 1, pot=10, dealt=2, saw_fourth=1)
    count_timeout(activity, T0)                                  # an hour before: gone
    count_timeout(activity, T0 + HOUR_MS - BUCKET_MS + 5)        # 55 minutes before: kept
    assert [(b.hands, b.timeouts) for b in activity] == [(0, 1), (1, 0)]


def test_the_figures_of_the_hour_before_a_moment() -> None:
    activity: list[Bucket] = []
    count_hand(activity, T0, pot=300, dealt=4, saw_fourth=3)
    count_hand(activity, T0 + 20 * 60_000, pot=101, dealt=4, saw_fourth=0)
    count_timeout(activity, T0 + 20 * 60_000)
    f = figures(entry(activity), T0 + 30 * 60_000)
    assert (f.seats_taken, f.seats_free) == (2, 6)              # R2: eight players at most
    assert (f.hands_per_hour, f.average_pot, f.fourth_street_pct, f.timeouts_per_hour) == (2, 200, 37, 1)
    later = figures(entry(activity), T0 + HOUR_MS + 5 * 60_000)   # the first bucket left the hour
    assert (later.hands_per_hour, later.average_pot, later.fourth_street_pct) == (1, 101, 0)
    idle = figures(entry(activity), T0 + 3 * HOUR_MS)
    assert (idle.hands_per_hour, idle.average_pot, idle.fourth_street_pct) == (0, None, None)
