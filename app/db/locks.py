"""Cross-process exclusion: start-up work (migrations, seeding) that replicas may run at once, and SQLite's
writers in several processes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import filelock
import structlog
from sqlalchemy import text
from sqlalchemy.engine import Connection

log = structlog.get_logger("app.db")
POLL_S = 0.002  # a write turn lasts a few milliseconds: a waiting writer looks again this often

# Arbitrary constants ("mcpapp" + a suffix): one lock per kind of start-up work.
MIGRATION_LOCK = 0x6D6370617070
SEED_LOCK = 0x6D6370617071


@contextmanager
def advisory_lock(connection: Connection, key: int) -> Iterator[None]:
    """PostgreSQL: the first replica takes the lock and works; the others wait, then find nothing
    left to do. SQLite needs nothing: its writers already serialise on the database lock."""
    if connection.dialect.name != "postgresql":
        yield
        return
    connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
    connection.commit()
    try:
        yield
    finally:
        connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
        connection.commit()


class WriteTurns:
    """SQLite: one writing process at a time, taking turns on a lock file before ``BEGIN IMMEDIATE``.

    Within a process the write threads already queue writers in order (``Database``); across processes
    (uvicorn workers, the CLI) they met only in SQLite's busy handler, which sleeps up to 100 ms between
    tries: with two workers saving at once, a save waited up to a second. Here a writer first takes the
    lock file beside the database (``filelock``: an exclusive ``flock`` on Unix, which the kernel drops
    with a process that dies; each thread its own), trying again every 2 ms. That is polling, not a
    queue: a process that keeps writing can take the turn again first, and after ``timeout`` a writer
    goes on without it into SQLite's own busy timeout, so the worst wait is twice ``timeout``, as
    unlikely as it was before. A lock file that cannot be made or locked (a read-only directory, a file
    system without locks) leaves writers to SQLite, said once in the log.
    """

    def __init__(self, database_path: str, timeout: float) -> None:
        self.path = database_path + "-writeturn"
        self._lock = filelock.FileLock(self.path, timeout=timeout, mode=0o600)
        self._said = False

    @contextmanager
    def turn(self) -> Iterator[None]:
        try:
            self._lock.acquire(poll_interval=POLL_S)
        except filelock.Timeout:  # another process holds it past the timeout: SQLite decides
            yield
            return
        except OSError as exc:  # a read-only directory, a file system without locks: SQLite decides alone
            self._unlocked(exc)
            yield
            return
        try:
            yield
        finally:
            self._lock.release()

    def _unlocked(self, exc: OSError) -> None:
        if not self._said:
            self._said = True
            log.warning("db.write_turns_unavailable", path=self.path, error=type(exc).__name__)
