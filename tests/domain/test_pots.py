"""Pots (R26): every chip put in lands in exactly one pot, and only live seats that
reached a pot's level can win it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from studroom.domain.pots import build_pots

SEATS = st.dictionaries(st.integers(0, 9), st.integers(0, 500), min_size=2, max_size=10)


@given(SEATS, st.data())
def test_R26_pots_hold_every_chip_and_only_reachable_seats_win_them(contributions, data):
    seats = sorted(contributions)
    live = data.draw(st.lists(st.sampled_from(seats), min_size=1, unique=True))
    capped = data.draw(st.lists(st.sampled_from(live), unique=True))
    pots = build_pots(contributions, live, capped)
    assert sum(p.amount for p in pots) == sum(contributions.values())
    for pot in pots:
        assert pot.amount > 0 and pot.eligible == sorted(pot.eligible)
        assert set(pot.eligible) <= set(live)
    if not capped and pots:               # nobody all-in: one pot, for those who matched the top
        top = max(contributions[s] for s in live)
        assert len(pots) == 1 and pots[0].eligible == sorted(s for s in live if contributions[s] >= top)
