"""Test doubles for the seams: a unit of work without a database, a token verifier with fixed tokens."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

from mcp.server.auth.provider import AccessToken

R = TypeVar("R")


class FakeUnitOfWork:
    """``UnitOfWork`` for unit tests: hands out the repositories it was given, records commit/rollback."""

    def __init__(self, repositories: dict[type, Any]) -> None:
        self.repositories = repositories
        self.committed = False
        self.rolled_back = False
        self.notes: dict[str, set[str]] = {}

    def __enter__(self) -> FakeUnitOfWork:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self.committed:
            self.rolled_back = True

    def repository(self, kind: type[R]) -> R:
        return self.repositories[kind]

    def commit(self) -> None:
        self.committed = True

    def rollback(self) -> None:
        self.rolled_back = True


@dataclass
class StaticTokenVerifier:
    """A ``TokenVerifier`` over a fixed token table. Test double only: the OAuth issue brings the
    real JWT verifier; what is under test here is what the server does with its answer."""

    tokens: dict[str, AccessToken] = field(default_factory=dict)

    async def verify_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)


class ProgressSink:
    """What ``app.mcp.progress.Progress`` sends, kept: (progress, total, message) of each report."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, done: float, total: float | None, message: str | None) -> None:
        self.sent.append((done, total, message))
