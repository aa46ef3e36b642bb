"""A table's last hour, in five-minute buckets, and the figures the lobby shows of it.

Per-hour figures count what happened in the hour before a moment: the hands that
ended, the turns that timed out.  Each bucket holds five minutes, so an entry keeps at
most twelve whatever the pace of play, and the hour slides in five-minute steps.  The
time of a fact is when JetStream stored its public event: a redelivery or a rebuild
from the stream gives the same buckets.  The averages (pot, share of players who see
4th street) are over the hands of that hour.
"""

from __future__ import annotations

from typing import Final

from .entry import Bucket, Figures, LobbyEntry

BUCKET_MS: Final = 5 * 60 * 1000
HOUR_MS: Final = 60 * 60 * 1000
BUCKETS: Final = HOUR_MS // BUCKET_MS


def bucket_at(activity: list[Bucket], at_ms: int) -> Bucket | None:
    """The bucket of ``at_ms`` (made if it is new); None if it is older than the hour
    the list keeps."""
    start = at_ms - at_ms % BUCKET_MS
    for bucket in reversed(activity):
        if bucket.start_ms == start:
            return bucket
        if bucket.start_ms < start:
            break
    if activity and start <= activity[-1].start_ms - HOUR_MS:
        return None
    bucket = Bucket(start)
    activity.append(bucket)
    activity.sort(key=lambda b: b.start_ms)
    newest = activity[-1].start_ms
    activity[:] = [b for b in activity if b.start_ms > newest - HOUR_MS]
    return bucket


def count_hand(activity: list[Bucket], at_ms: int, pot: int, dealt: int, saw_fourth: int) -> None:
    bucket = bucket_at(activity, at_ms)
    if bucket is not None:
        bucket.hands += 1
        bucket.pots += pot
        bucket.dealt += dealt
        bucket.saw_fourth += saw_fourth


def count_timeout(activity: list[Bucket], at_ms: int) -> None:
    bucket = bucket_at(activity, at_ms)
    if bucket is not None:
        bucket.timeouts += 1


def figures(entry: LobbyEntry, now_ms: int) -> Figures:
    """The entry's figures for the hour before ``now_ms`` (the buckets that began in it)."""
    hour = [b for b in entry.activity if b.start_ms > now_ms - HOUR_MS]
    hands = sum(b.hands for b in hour)
    dealt = sum(b.dealt for b in hour)
    taken = len(entry.players)
    return Figures(
        seats_taken=taken,
        seats_free=max(min(entry.seats, entry.max_players) - taken, 0),
        average_pot=sum(b.pots for b in hour) // hands if hands else None,
        hands_per_hour=hands,
        fourth_street_pct=100 * sum(b.saw_fourth for b in hour) // dealt if dealt else None,
        timeouts_per_hour=sum(b.timeouts for b in hour),
    )
