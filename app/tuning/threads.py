"""The hop from the event loop to the database threads, cheaper than ``anyio.to_thread.run_sync``.

Every account-data call makes this hop, and a linked user's grant check too when its cache expires. anyio's
costs ~80 µs of CPU per call at 16 calls in flight (its limiter, a cancel scope, a future and a wake-up of the
loop per call; ``bench/hop.py``), more than a SQLite read itself. Here jobs queue for a fixed set of threads, and
results go back to the loop in batches: a finished job whose loop has not yet been woken for an earlier one
rides on that wake-up. Under load the loop wakes once for several jobs (~20 µs a hop over the job, same script).

Semantics are ``anyio.to_thread.run_sync``'s default: a job that started runs to its end and its caller waits
for it even when cancelled (a commit is never abandoned half-told); a job still queued when its caller is
cancelled never runs; the caller's context variables (the request's log fields) are the job's.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar, TypeVarTuple

import anyio

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
# A thread with nothing to do for this long ends (the next job starts another): a Database nobody uses any more
# holds no thread, and a worker idle overnight holds none.
IDLE_S = 30.0
_QUEUED, _RUNNING, _ABANDONED = 0, 1, 2


class _Job:
    __slots__ = ("loop", "future", "run", "state", "result", "error")
    run: Callable[[], Any] | None  # None once it ran or was abandoned: its references go then


    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], run: Callable[[], Any]) -> None:
        self.loop, self.future, self.run = loop, future, run
        self.state = _QUEUED
        self.result: Any = None
        self.error: BaseException | None = None


class ThreadLane:
    """Up to ``threads`` daemon threads, started as the load asks for them, that run jobs in arrival order."""

    def __init__(self, threads: int, name: str = "db") -> None:
        if threads < 1:
            raise ValueError("a thread lane needs at least one thread")
        self.size, self.name = threads, name
        self._lock = threading.Condition(threading.Lock())
        self._queued: deque[_Job] = deque()
        self._threads = 0
        self._idle = 0
        self._closing = False
        # Finished jobs per loop, and whether that loop has been asked to take them.
        self._done: dict[asyncio.AbstractEventLoop, list[_Job]] = {}

    async def run(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()
        job = _Job(loop, future, lambda: context.run(fn, *args))
        with self._lock:
            self._closing = False
            self._queued.append(job)
            # A thread notified but not yet running still counts as idle: wake one only while the idle ones are
            # enough for everything queued, else start another (a burst spreads over the lane's threads).
            if len(self._queued) <= self._idle:
                self._lock.notify()
            elif self._threads < self.size:
                self._threads += 1
                try:
                    threading.Thread(target=self._work, name=f"{self.name}-{self._threads}", daemon=True).start()
                except BaseException:
                    self._threads -= 1
                    self._queued.remove(job)
                    raise
        try:
            # Shielded from the task's cancellation so that the job's own future survives it (below).
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            with self._lock:
                if job.state == _QUEUED:
                    job.state = _ABANDONED  # never runs: nothing of it happened
                    job.run = None
                    raise
            # It runs: wait for its end and return what it gave, as anyio's own hop does (the cancellation lands
            # at the caller's next checkpoint): a committed write's notes still reach Database.write's hooks.
            with anyio.CancelScope(shield=True):
                await asyncio.wait([future])
            return future.result()

    def close(self) -> None:
        """End the idle threads now (a later job starts its own)."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()

    def _work(self) -> None:
        lock = self._lock
        while True:
            job = done = None  # an idle thread keeps nothing of its last job
            with lock:
                while not self._queued:
                    if self._closing:
                        self._threads -= 1
                        return
                    self._idle += 1
                    woken = lock.wait(IDLE_S)
                    self._idle -= 1
                    if not woken and not self._queued:
                        self._threads -= 1
                        return
                job = self._queued.popleft()
                if job.state == _ABANDONED:
                    continue
                job.state = _RUNNING
            assert job.run is not None  # not abandoned (skipped above), and not run yet
            try:
                job.result = job.run()
            except StopIteration as exc:  # a future cannot carry it
                job.error = RuntimeError("a database job raised StopIteration")
                job.error.__cause__ = exc
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, whatever it is
                job.error = exc
            job.run = None  # the callable's references go now, not with the job
            with lock:
                done = self._done.get(job.loop)
                if done is not None:  # the loop is already asked to take its finished jobs: this one goes too
                    done.append(job)
                    continue
                self._done[job.loop] = [job]
            try:
                job.loop.call_soon_threadsafe(self._deliver, job.loop)
            except RuntimeError:  # that loop is closed: nobody is waiting any more
                with lock:
                    self._done.pop(job.loop, None)

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            jobs = self._done.pop(loop, ())
        for job in jobs:
            if job.future.done():
                continue
            if job.error is not None:
                job.future.set_exception(job.error)
            else:
                job.future.set_result(job.result)
