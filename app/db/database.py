"""The one way async code touches the (sync) database.

SQLAlchemy runs synchronously; ``read`` and ``write`` run a callable with an open
unit of work on a worker thread, so the event loop never blocks. ``write`` commits
when the callable returns; ``read`` always rolls back. Driver failures come out as
``DatabaseUnavailable`` (retry), ``DatabaseNotMigrated`` (operator action) or the
original exception (a bug).

The threads: anyio's, each direction (reads, writes) and the readiness probe bounded by a limiter of
its own, never anyio's default one, which everything else that calls ``to_thread`` shares. The speed-up
package may hand in a cheaper hop (``Hops``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Protocol, TypeVar, TypeVarTuple

import anyio
import anyio.to_thread
import structlog
from sqlalchemy import text
from sqlalchemy.orm import sessionmaker

from app.db import migrate
from app.db.engine import SQLITE_BUSY_TIMEOUT_S, WRITE, make_engine
from app.db.errors import (
    NOT_MIGRATED_MESSAGE,
    DatabaseNotMigrated,
    DatabaseUnavailable,
    is_outage,
    is_undefined_object,
)
from app.db.locks import WriteTurns
from app.db.uow import SqlUnitOfWork, UnitOfWork

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
log = structlog.get_logger(__name__)
PROBE_TIMEOUT_S = 3.0
# How long a probe's answer is given to the probes after it: a kubelet, a load balancer and a
# monitor probing every replica each cost one database round trip a second at most, whatever
# their number.
READINESS_REUSE_S = 1.0


class Hop(Protocol):
    """Runs a blocking call on a thread, at most a set number at once, with ``anyio.to_thread.run_sync``'s
    semantics: a call that started runs to its end and its caller waits for it even when cancelled; one
    still waiting for a thread when its caller is cancelled never runs; the caller's context variables
    are the call's."""

    async def run(self, fn: Callable[[*Ts], T], *args: *Ts) -> T: ...

    def close(self) -> None: ...


# What makes the hops of one direction: (threads at most, a name for them).
Hops = Callable[[int, str], Hop]


class ThreadsOfTheirOwn:
    """anyio's worker threads, at most ``threads`` of them at once for this direction."""

    def __init__(self, threads: int, name: str) -> None:
        self.name = name
        self._limiter = anyio.CapacityLimiter(threads)

    async def run(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    def close(self) -> None:
        """anyio's idle threads end on their own."""


@dataclass(frozen=True, slots=True)
class Readiness:
    database: str  # ok | unreachable | timeout | error
    schema: str  # ok | ahead | behind | not migrated | unknown

    @property
    def ready(self) -> bool:
        return self.database == "ok" and self.schema in ("ok", "ahead")


class Database:
    def __init__(self, url: str, *, pool_size: int = 10, connect_timeout: float = 5.0,
                 statement_timeout: float = 15.0, read_threads: int | None = None,
                 hops: Hops = ThreadsOfTheirOwn) -> None:
        self.url = url
        self.engine = make_engine(url, pool_size=pool_size, connect_timeout=connect_timeout,
                                  statement_timeout=statement_timeout)
        self._reads = sessionmaker(self.engine, expire_on_commit=False)
        self._writes = sessionmaker(self.engine.execution_options(**{WRITE: True}), expire_on_commit=False)
        # No more threads than connections (pool + overflow): extra threads would only queue on the pool while
        # holding a thread, and contend for the GIL with the event loop. On SQLite one of each: a read is CPU under
        # the GIL (more threads only contend for it: one measured half the CPU per read of twenty at 16 calls in
        # flight), and the file has one writer at a time: this process's writers queue here, in order, rather
        # than in SQLite's busy handler, which sleeps up to 100 ms a try (16 concurrent saves measured a p99 of a
        # second, 59 ms here). Reads apart from writes: a writer waiting for the file's lock (another process
        # holds it) holds up no read.
        sqlite = self.engine.dialect.name == "sqlite"
        self._writers = hops(1 if sqlite else 2 * pool_size, "db-write")
        # As make_engine tells a file from memory: a database in memory belongs to this process alone.
        database = self.engine.url.database
        self._turns = WriteTurns(database, SQLITE_BUSY_TIMEOUT_S) if sqlite and database and database != ":memory:" \
            else None
        self._readers = hops(read_threads or (1 if sqlite else 2 * pool_size), "db-read")
        # Readiness gets its own short-deadline, unpooled connections: a pooled connection to a
        # hung server would hang the probe with it.
        self._probe_engine = make_engine(url, connect_timeout=PROBE_TIMEOUT_S - 1,
                                         statement_timeout=PROBE_TIMEOUT_S - 1, pooled=False)
        # Set while a probe thread runs, cleared only when it really ends (an abandoned thread
        # outlives its request): probes arriving meanwhile fail fast instead of parking one more
        # thread each in a hung driver.
        self._probe_running = threading.Event()
        # The probe's own thread: on anyio's default limiter, which outbound work and file spooling
        # share, callers who fill it (a slow DNS server) would make /readyz time out.
        self._probe_threads = anyio.CapacityLimiter(1)
        # The probe in flight (probes arriving meanwhile wait for its answer) and the last answer.
        self._flight: anyio.Event | None = None
        self._answer: tuple[float, Readiness] | None = None
        self._on_commit: list[Callable[[Mapping[str, set[str]]], Awaitable[None]]] = []

    def unit_of_work(self, *, write: bool = False) -> UnitOfWork:
        return SqlUnitOfWork(self._writes if write else self._reads)

    def read_sync(self, fn: Callable[[UnitOfWork], T]) -> T:
        with self._translated():
            with self.unit_of_work() as uow:
                return fn(uow)

    def write_sync(self, fn: Callable[[UnitOfWork], T]) -> T:
        """``write`` for code that runs no event loop (start-up, the CLI): what it notes reaches no ``on_commit``
        hook; a command whose writes others must hear of uses ``anyio.run(db.write, fn)``."""
        return self._write_noted(fn)[0]

    def _write_noted(self, fn: Callable[[UnitOfWork], T]) -> tuple[T, dict[str, set[str]]]:
        with self._translated():
            with self._turns.turn() if self._turns is not None else nullcontext(), \
                    self.unit_of_work(write=True) as uow:
                result = fn(uow)
                uow.commit()
                return result, uow.notes

    def on_commit(self, hook: Callable[[Mapping[str, set[str]]], Awaitable[None]]) -> None:
        """Call ``hook`` with the notes of every ``write`` that committed some (``app.db.uow.note``), before that
        ``write`` returns, on the event loop; the hook is to handle its own failures."""
        self._on_commit.append(hook)

    async def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        return await self._readers.run(self.read_sync, fn)

    async def write(self, fn: Callable[[UnitOfWork], T]) -> T:
        result, notes = await self._writers.run(self._write_noted, fn)
        if notes and self._on_commit:
            # Shielded: the write is durable, so whoever caches what it changed hears of it even if this call's
            # own caller has gone (a client that hung up after its revocation committed).
            with anyio.CancelScope(shield=True):
                for hook in self._on_commit:
                    await hook(notes)
        return result

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            if is_outage(exc):
                log.warning("db.unavailable", error=type(getattr(exc, "orig", None) or exc).__name__)
                raise DatabaseUnavailable("The database is unavailable, please retry shortly.") from exc
            if is_undefined_object(exc) and self._schema_behind():
                raise DatabaseNotMigrated(NOT_MIGRATED_MESSAGE) from exc
            raise

    def _schema_behind(self) -> bool:
        try:
            status = self.schema_status_sync()
        except Exception:  # best effort: the original error is what the caller gets otherwise
            return False
        if status in ("behind", "not migrated"):
            log.warning("db.not_migrated", schema=status)
            return True
        return False

    def schema_status_sync(self) -> str:
        with self._probe_engine.connect() as conn:
            return migrate.schema_status(migrate.current_revisions(conn))

    def _probe_sync(self) -> Readiness:
        try:
            with self._probe_engine.connect() as conn:
                conn.execute(text("SELECT 1"))
                return Readiness("ok", migrate.schema_status(migrate.current_revisions(conn)))
        except Exception as exc:  # a probe answers; whatever went wrong is "not ready", logged
            if is_outage(exc):
                return Readiness("unreachable", "unknown")
            log.error("db.probe_failed", exc_info=exc)
            return Readiness("error", "unknown")

    async def readiness(self, deadline: float = PROBE_TIMEOUT_S) -> Readiness:
        """Database reachable and schema at head, answered within ``deadline`` seconds whatever the server does.

        Probes arriving while one is in flight share its answer, and for ``READINESS_REUSE_S`` after: a
        probe is never "not ready" because another one is running.
        """
        if self._answer is not None and time.monotonic() - self._answer[0] < READINESS_REUSE_S:
            return self._answer[1]
        if self._flight is not None:
            with anyio.move_on_after(deadline):
                await self._flight.wait()
            return self._answer[1] if self._answer is not None else Readiness("timeout", "unknown")
        self._flight = flight = anyio.Event()
        self._answer = None  # the probes waiting on this one get its answer, or "timeout": never an older one
        try:
            # Shielded: the probes waiting on this one get its answer even if this one's client hung
            # up; the deadline bounds it. The scope swallows only its own cancellation, and nothing
            # cancels it (no deadline, no handle kept); if something did, no answer: "timeout".
            state = Readiness("timeout", "unknown")
            with anyio.CancelScope(shield=True):
                state = await self._probe(deadline)
            self._answer = (time.monotonic(), state)
            return state
        finally:
            self._flight = None
            flight.set()

    async def _probe(self, deadline: float) -> Readiness:
        if self._probe_running.is_set():
            # The last probe's thread is still stuck in the driver past its deadline: the database
            # hangs; answer so rather than park one more thread in it.
            return Readiness("timeout", "unknown")
        self._probe_running.set()
        started = threading.Event()

        def probe() -> Readiness:
            started.set()
            try:
                return self._probe_sync()
            finally:
                self._probe_running.clear()

        try:
            with anyio.fail_after(deadline):
                # abandon_on_cancel: the deadline holds even if the driver ignores its own; the
                # thread finishes (driver timeouts) in the background.
                return await anyio.to_thread.run_sync(probe, abandon_on_cancel=True,
                                                      limiter=self._probe_threads)
        except TimeoutError:
            log.error("db.unavailable", error="probe_timeout")
            return Readiness("timeout", "unknown")
        finally:
            if not started.is_set():  # abandoned at its deadline before it ran
                self._probe_running.clear()

    def dispose(self) -> None:
        self._readers.close()
        self._writers.close()
        self.engine.dispose()
        self._probe_engine.dispose()

