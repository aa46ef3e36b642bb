"""A stand-in for a NATS connection's request/reply, for the clients' tests."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


class FakeNats:
    """Answers each request with the next of ``answers`` (reply bytes, or an exception
    to raise); records what was asked."""

    def __init__(self, *answers: bytes | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, bytes]] = []

    async def request(self, subject: str, data: bytes, timeout: float) -> Any:
        self.requests.append((subject, data))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(data=answer)
