"""Domain errors: every refusal has a stable code that clients can switch on."""

from __future__ import annotations


class DomainError(Exception):
    """A command the rules refuse.  ``code`` is stable (clients and scenario files rely
    on it); ``message`` says what was wrong in words.  Raising one never changes state.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
