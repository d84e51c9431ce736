"""The unit of work: one transaction, the session it runs on, and the repositories that use it.

Services receive a ``UnitOfWork`` and ask it for repositories; they never commit.
Whoever opened the unit of work decides: ``commit()`` is explicit, and leaving the
``with`` block without it rolls everything back (an exception included).
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol, TypeVar

from sqlalchemy.orm import Session

R = TypeVar("R")
# ``session.info`` key of what a transaction records for after its commit (``note``): the grants it revoked, say,
# so that the caches of those rows hear of it once it is durable, and never for a write rolled back.
NOTES = "app.notes"


def note(session: Session, kind: str, *values: str) -> None:
    """Record ``values`` under ``kind`` for whoever learns of this transaction's commit (``Database.on_commit``)."""
    session.info.setdefault(NOTES, {}).setdefault(kind, set()).update(values)


class UnitOfWork(Protocol):
    notes: dict[str, set[str]]  # what its committed transactions recorded with ``note``, by kind

    def __enter__(self) -> UnitOfWork: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...

    def repository(self, kind: Callable[[Session], R]) -> R:
        """The repository of this class, bound to this transaction (one instance per unit of work)."""
        ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...


class SqlUnitOfWork:
    """A ``UnitOfWork`` over one SQLAlchemy session. Repositories are built as ``kind(session)``."""

    def __init__(self, session_factory: Callable[[], Session]) -> None:
        self._factory = session_factory
        self._session: Session | None = None
        self._repositories: dict[Callable[[Session], Any], Any] = {}
        self.notes: dict[str, set[str]] = {}

    def __enter__(self) -> SqlUnitOfWork:
        if self._session is not None:
            raise RuntimeError("this unit of work is already open")
        self._session = self._factory()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        session, self._session = self._session, None
        self._repositories.clear()
        if session is None:
            return
        try:
            session.rollback()  # a no-op after commit(); otherwise nothing is kept (its notes go with the session)
        finally:
            session.close()

    def _open_session(self) -> Session:
        if self._session is None:
            raise RuntimeError("use the unit of work inside `with uow:`")
        return self._session

    def repository(self, kind: Callable[[Session], R]) -> R:
        repo = self._repositories.get(kind)
        if repo is None:
            repo = self._repositories[kind] = kind(self._open_session())
        return repo

    def commit(self) -> None:
        session = self._open_session()
        session.commit()
        for kind, values in session.info.pop(NOTES, {}).items():
            self.notes.setdefault(kind, set()).update(values)

    def rollback(self) -> None:
        session = self._open_session()
        session.rollback()
        session.info.pop(NOTES, None)

