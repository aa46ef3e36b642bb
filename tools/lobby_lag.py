"""How far the lobby lags behind live play: the measure ``bench lobby`` reports and the
live lobby tests check (docs/design/lobby.md)."""

from __future__ import annotations


def lags_ms(public: dict[str, dict[int, float]], stored: dict[str, list[tuple[float, int]]]) -> list[float]:
    """For each public event (``public``: table -> version -> when it reached a
    spectator, seconds): how long until the lobby stored an entry of its table at that
    version or later (``stored``: table -> (when, version) in the order stored), ms."""
    lags = []
    for table_id, arrivals in public.items():
        values, i = stored.get(table_id, []), 0          # a table's stored versions only rise
        for version in sorted(arrivals):
            while i < len(values) and values[i][1] < version:
                i += 1
            if i == len(values):
                break
            lags.append(max(0.0, values[i][0] - arrivals[version]) * 1000)
    return lags
