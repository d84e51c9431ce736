"""Cross-process exclusion: start-up work (migrations, seeding) that replicas may run at once, and SQLite's
writers in several processes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from sqlalchemy import text
from sqlalchemy.engine import Connection

try:
    import fcntl
except ImportError:  # not on Windows: writers meet in SQLite's busy handler only
    fcntl = None

log = structlog.get_logger("app.db")

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

    Within a process the write threads already queue writers in order (``Database``); across processes (uvicorn
    workers, the CLI) they met only in SQLite's busy handler, which sleeps up to 100 ms between tries: with two
    workers saving at once, a save waited up to a second. Here a writer first takes an exclusive ``flock`` on a
    file beside the database (a fresh open file per turn, so threads of one process exclude each other too; the
    kernel drops it with a process that dies), trying again every 2 ms at most. That is polling, not a queue: a
    process that keeps writing can take the turn again first, and after ``timeout`` a writer goes on without it
    into SQLite's own busy timeout, so the worst wait is twice ``timeout``, as unlikely as it was before. A file
    system that cannot lock (or a lock file this user may not open) leaves writers to SQLite, said once in the log.

    Not ``filelock``, measured: filelock 4.3.1 takes about 95 µs a turn here (its fork and registry bookkeeping,
    a directory probe), this about 3 µs (an open, a flock, a close); under 16 concurrent ``save_recipe`` calls
    filelock held 8.7% of the GIL's samples (``bench/profile.py --case recipes-write``), more than the 5% a
    change may cost a bench cell.
    """

    def __init__(self, database_path: str, timeout: float) -> None:
        self.path = database_path + "-writeturn"
        self.timeout = timeout
        self._said = False

    @contextmanager
    def turn(self) -> Iterator[None]:
        if fcntl is None:
            yield
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:  # a read-only directory, another user's file: SQLite decides alone
            self._unlocked(exc)
            yield
            return
        try:
            try:
                self._take(fd)
            except OSError as exc:  # not BlockingIOError: a file system without locks (ENOLCK)
                self._unlocked(exc)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _unlocked(self, exc: OSError) -> None:
        if not self._said:
            self._said = True
            log.warning("db.write_turns_unavailable", path=self.path, error=type(exc).__name__)

    def _take(self, fd: int) -> None:
        assert fcntl is not None  # turn() calls this only where fcntl was imported
        deadline = time.monotonic() + self.timeout
        pause = 0.0002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(pause)  # a write turn lasts a few milliseconds: sleeps stay short
                pause = min(pause * 2, 0.002)
