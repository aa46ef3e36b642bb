"""Domain errors: every refusal has a stable code that clients can switch on.

The codes are part of the wire contract (replies, scenario files, docs/schema): a code
is never renamed or reused for another meaning.  The services add their own codes
(``studroom.services.wire.protocol``).
"""

from __future__ import annotations

from typing import Final

# Tables and seats
UNKNOWN_GAME: Final = "unknown_game"
BAD_STAKES: Final = "bad_stakes"          # a chip amount of the settings out of bounds (domain/limits.py)
BAD_CONFIG: Final = "bad_config"          # any other setting out of bounds (timers)
BAD_NAME: Final = "bad_name"              # a player name or table id that is no name (domain/names.py)
TOO_MANY_SEATS: Final = "too_many_seats"
ALREADY_OPEN: Final = "already_open"
TABLE_NOT_OPEN: Final = "table_not_open"
TABLE_CLOSED: Final = "table_closed"      # closed (or closing) by an operator: no command, no new seat
UNKNOWN_PLAYER: Final = "unknown_player"  # an operator named a player who holds no seat here
UNKNOWN_SEAT: Final = "unknown_seat"
SEAT_TAKEN: Final = "seat_taken"
ALREADY_SEATED: Final = "already_seated"
ALREADY_LEAVING: Final = "already_leaving"
NO_CHANGE: Final = "no_change"
ALREADY_WAITING: Final = "already_waiting"  # he is on the table's waiting list already
NOT_WAITING: Final = "not_waiting"          # he is not on the table's waiting list
SEAT_OFFERED: Final = "seat_offered"        # the seat is offered to (or kept for) a player on the waiting list

# Chips
BAD_AMOUNT: Final = "bad_amount"
SHORT_BUY_IN: Final = "short_buy_in"
OVER_MAX_BUY_IN: Final = "over_max_buy_in"

# Accounts (the cashier: domain/account.py)
INSUFFICIENT_FUNDS: Final = "insufficient_funds"      # more than the account's balance
DUPLICATE_REFERENCE: Final = "duplicate_reference"    # a deposit's or withdrawal's reference used before
UNKNOWN_BUY_IN: Final = "unknown_buy_in"              # no such buy-in reserved in the account
BUY_IN_IN_FLIGHT: Final = "buy_in_in_flight"          # the player's last buy-in at that table is not settled yet

# Hands and dealing
HAND_IN_PROGRESS: Final = "hand_in_progress"
NOT_ENOUGH_PLAYERS: Final = "not_enough_players"
NO_HAND: Final = "no_hand"
NOT_IN_HAND: Final = "not_in_hand"
AUTO_DEALT: Final = "auto_dealt"
NOT_DEALING_NOW: Final = "not_dealing_now"
BAD_DEAL: Final = "bad_deal"
NO_DECK: Final = "no_deck"
DECK_TOO_SHORT: Final = "deck_too_short"
BAD_CARD: Final = "bad_card"
DUPLICATE_CARD: Final = "duplicate_card"
BAD_SEED: Final = "bad_seed"
BAD_ENTROPY: Final = "bad_entropy"        # a player's entropy for the deck that is no 1..32 bytes of hex (R32)

# Turns and betting
NOT_YOUR_TURN: Final = "not_your_turn"
ILLEGAL_ACTION: Final = "illegal_action"
BAD_SIZE: Final = "bad_size"
CAP_REACHED: Final = "cap_reached"
STALE_TIMEOUT: Final = "stale_timeout"

# Showdown
MUST_SHOW: Final = "must_show"

# Commands
FORBIDDEN: Final = "forbidden"            # the sender may not give this command (domain/authority.py)
DUPLICATE_COMMAND: Final = "duplicate_command"   # a sender's command id not above his last (domain/command_ids.py)
BAD_COMMAND_ID: Final = "bad_command_id"
UNKNOWN_COMMAND: Final = "unknown_command"
BAD_SCENARIO: Final = "bad_scenario"

# Refusals that only mean "the turn you answered is over" (a bot or a client
# that answered late, or twice): nothing to do, the next turn will ask again.
STALE_ANSWER: Final = frozenset({NOT_YOUR_TURN, ILLEGAL_ACTION, NO_HAND, NOT_IN_HAND, STALE_TIMEOUT, DUPLICATE_COMMAND})


def quoted(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters: a refusal quotes what it was sent,
    never all of a hostile megabyte."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class DomainError(Exception):
    """A command the rules refuse.  ``code`` is stable (clients and scenario files rely
    on it); ``message`` says what was wrong in words.  Raising one never changes state.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
