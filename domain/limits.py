"""The bounds on every number a table stores: its settings and its chips.

Every chip amount in an event (stacks, bets, pots, rake, cash-outs) is at most
``MAX_TABLE_CHIPS``: a table never holds more chips than that (a buy-in above it is
refused), and no amount can exceed what the table holds.  10**12 is far below 2**53,
so every amount is exact as a JSON number in every client, and nothing overflows a
64-bit integer.
"""

from __future__ import annotations

from typing import Final

MAX_STAKE: Final = 10**9                # small bet, big bet, ante, bring-in, the rake cap
MAX_TABLE_CHIPS: Final = 10**12         # all the stacks at a table together; so also any max_buy_in
DEFAULT_MAX_BUY_IN_BIG_BETS: Final = 100   # R3's optional maximum, when a table sets none
TIMER_SECONDS: Final = (1, 3600)        # action, ante and showdown timers: 1 s .. 1 h
SEATS: Final = (2, 10)                  # seats at a table (R2 caps the players per game)
