"""Engine, unit of work, and the one way async code touches the (sync) database.

SQLAlchemy runs synchronously here; every use goes through ``Database.run``,
which executes the callable on a worker thread so the event loop never blocks.
Services receive a ``UnitOfWork`` and never commit: the caller decides.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio.to_thread
import structlog
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

T = TypeVar("T")
log = structlog.get_logger(__name__)


class DatabaseUnavailable(RuntimeError):
    """The database could not be reached; callers turn this into a clean error, never a traceback."""


class UnitOfWork:
    """One transaction. ``commit()`` is explicit; leaving without it rolls back."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def commit(self) -> None:
        self.session.commit()

    def rollback(self) -> None:
        self.session.rollback()


def make_engine(url: str, pool_size: int = 10) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 15})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            # WAL lets several uvicorn workers read while one writes.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=15000")
            cur.close()

        return engine
    return create_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True, pool_recycle=1800)


class Database:
    def __init__(self, url: str, pool_size: int = 10) -> None:
        self.url = url
        self.engine = make_engine(url, pool_size)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        # No more threads than connections (pool + overflow): extra threads would only queue on
        # the pool while holding a thread, and contend for the GIL with the event loop.
        self._threads = anyio.CapacityLimiter(2 * pool_size)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def run_sync(self, fn: Callable[[UnitOfWork], T]) -> T:
        try:
            with self._sessions() as session:
                return fn(UnitOfWork(session))
        except PoolTimeout as exc:
            log.error("db.unavailable", error="pool_timeout")
            raise DatabaseUnavailable("The database is busy, please retry shortly.") from exc
        except DBAPIError as exc:
            # Connection-level failures only; a bad query is a bug and must surface as one.
            if not (isinstance(exc, OperationalError) or exc.connection_invalidated):
                raise
            log.error("db.unavailable", error=type(exc.orig).__name__ if exc.orig else type(exc).__name__)
            raise DatabaseUnavailable("The database is unavailable, please retry shortly.") from exc

    async def run(self, fn: Callable[[UnitOfWork], T]) -> T:
        return await anyio.to_thread.run_sync(self.run_sync, fn, limiter=self._threads)

    async def ping(self) -> bool:
        def _ping(uow: UnitOfWork) -> bool:
            uow.session.execute(text("SELECT 1"))
            return True

        try:
            with anyio.fail_after(3):
                return await self.run(_ping)
        except (DatabaseUnavailable, TimeoutError):
            return False

    def dispose(self) -> None:
        self.engine.dispose()
