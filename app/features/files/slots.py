"""This worker's analysis processes, shared fairly and capped in processor time.

Analysing a file runs in a worker process (parsing would otherwise hold the GIL against the event
loop). There are ``slots`` of them per server worker. A crafted file can keep one busy for as long
as its parser lets it, so:

- a caller has at most ``per_caller`` calls fetching or analysing at once (an account; an anonymous
  caller by its address, never by a hint it chooses), and all anonymous callers together at most
  ``anonymous`` analyses; a call past a share is refused at once ("busy, retry in N s"), before its
  file is fetched when the share is already full then;
- a call within its share waits for a free slot at most ``wait`` seconds, then is refused the
  same way;
- an analysis gets ``cpu_seconds`` of processor time (``RLIMIT_CPU`` in its process, counted from
  its start: waiting for a slot is not counted); past it the analysis stops and nothing is kept.
  A parser stuck where no signal reaches it (inside C code) is killed at ``wall_seconds``.

The slots are this process's: the CPU they share is this pod's. What one caller may do across the
fleet is its budgets' (``app.limits``, counted in Redis), which bound how often it starts one.
"""

from __future__ import annotations

import functools
import math
import resource
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.to_process

from app.features.files.ingest import FileRejected
from app.limits import Caller

T = TypeVar("T")
SLOT_WAIT_S = 15.0  # a call within its share waits this long for a free slot


class AnalysisBusy(FileRejected):
    """No slot for this call now: the person and the model are told when to try again."""

    def __init__(self, retry_after: int, *, share: str) -> None:
        super().__init__(
            f"Too many files are being analysed{share} right now; nothing was fetched or kept. "
            f"Try again in {retry_after} s.",
            f"Tell the user the file is waiting its turn, then call this tool again with the same "
            f"file in about {retry_after} seconds; do not retry sooner.",
        )
        self.retry_after = retry_after


class CpuExceeded(BaseException):
    """Raised in the analysis process at its processor-time cap. A BaseException: the analysers turn
    every Exception into a partial result, and this one must end the analysis."""


class AnalysisStopped(FileRejected):
    """The analysis used its processor time, or its process ended: nothing was kept."""


@dataclass
class AnalysisSlots:
    slots: int
    cpu_seconds: float
    per_caller: int = 0  # 0: half the slots (at least one)
    anonymous: int = 0  # 0: half the slots (at least one)
    wait: float = SLOT_WAIT_S
    _held: Counter[str] = field(default_factory=Counter)
    _started: list[list[float]] = field(default_factory=list)  # when each running analysis began
    _anonymous_held: int = 0
    _free: anyio.CapacityLimiter | None = None
    _processes: anyio.CapacityLimiter | None = None

    def __post_init__(self) -> None:
        half = max(1, self.slots // 2)
        self.per_caller = self.per_caller or half
        self.anonymous = self.anonymous or half

    @property
    def wall_seconds(self) -> float:
        # Processes are at most the cores, so wall time is about CPU time; the margin covers a pod
        # whose cores its event loops share.
        return 3 * self.cpu_seconds + 5

    def _limiters(self) -> tuple[anyio.CapacityLimiter, anyio.CapacityLimiter]:
        # Made in the event loop that uses them (anyio's limiters belong to one).
        if self._free is None or self._processes is None:
            self._free = anyio.CapacityLimiter(self.slots)
            self._processes = anyio.CapacityLimiter(self.slots)  # never waited on: _free admits
        return self._free, self._processes

    @staticmethod
    def _share_key(caller: Caller) -> str:
        return caller.key if caller.account is not None else f"ip:{caller.address}"

    def check(self, caller: Caller) -> None:
        """Raise ``AnalysisBusy`` if the caller's share, or the anonymous callers', is full now."""
        if self._held[self._share_key(caller)] >= self.per_caller:
            raise AnalysisBusy(self._retry_after(), share=" for you")
        if caller.account is None and self._anonymous_held >= self.anonymous:
            raise AnalysisBusy(self._retry_after(), share=" for people who are not signed in")

    @contextmanager
    def claim(self, caller: Caller) -> Iterator[None]:
        """The caller's share, held from before its file is fetched to the end of its analysis, or
        ``AnalysisBusy``: its own calls at once are refused before they fetch anything. The
        anonymous
        callers' share and a slot are taken only for the analysis (``slot``): a slow download holds
        no one else back."""
        self.check(caller)  # no await between the check and the count: one decision
        key = self._share_key(caller)
        self._held[key] += 1
        try:
            yield
        finally:
            self._held[key] -= 1
            if not self._held[key]:
                del self._held[key]

    @asynccontextmanager
    async def slot(self, caller: Caller) -> AsyncIterator[None]:
        """The anonymous callers' share (for an anonymous caller) and a free slot, or
        ``AnalysisBusy``."""
        anonymous = caller.account is None
        if anonymous and self._anonymous_held >= self.anonymous:
            raise AnalysisBusy(self._retry_after(), share=" for people who are not signed in")
        self._anonymous_held += anonymous
        try:
            free, _ = self._limiters()
            acquired = False
            with anyio.move_on_after(self.wait):
                await free.acquire()
                acquired = True
            if not acquired:
                raise AnalysisBusy(self._retry_after(), share="")
            began = [time.monotonic()]  # its own object: two analyses may begin in the same tick
            self._started.append(began)
            try:
                yield
            finally:
                self._started.remove(began)
                free.release()
        finally:
            self._anonymous_held -= anonymous

    def _retry_after(self) -> int:
        """When the first running analysis ends at the latest (its processor-time cap)."""
        now = time.monotonic()
        left = min(
            (self.cpu_seconds - (now - began[0]) for began in self._started),
            default=self.cpu_seconds,
        )
        return max(1, math.ceil(left))

    async def run(self, caller: Caller, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in an analysis process, in a slot and within the caps (the caller's own
        share is ``claim``'s)."""
        async with self.slot(caller):
            _, processes = self._limiters()
            call = functools.partial(capped, self.cpu_seconds, func, *args)
            with anyio.move_on_after(self.wall_seconds):
                try:
                    return await anyio.to_process.run_sync(
                        call, cancellable=True, limiter=processes
                    )
                except CpuExceeded:
                    raise self._stopped() from None
                except anyio.BrokenWorkerProcess:
                    # Killed: by the kernel at the hard CPU limit, or for memory.
                    raise self._stopped() from None
        raise self._stopped()  # past its wall-clock bound: the process was killed

    def _stopped(self) -> AnalysisStopped:
        return AnalysisStopped(
            f"Analysing the file took more than {self.cpu_seconds:g} s of processor time and was "
            "stopped; nothing was kept.",
            "Tell the user this file is too complex to analyse here; a smaller or simpler file "
            "(fewer pages, a plain export) can be analysed.",
        )


def capped(cpu_seconds: float, func: Callable[..., T], *args: Any) -> T:
    """In the analysis process: ``func(*args)`` with ``cpu_seconds`` more of processor time than
    this process has used so far. The process is reused, so the limit is set per call and lifted
    after (an unprivileged process may raise its soft limit back up to the hard one)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = math.ceil(used + cpu_seconds)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    previous = signal.signal(signal.SIGXCPU, _over_cpu)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
    try:
        return func(*args)
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        signal.signal(signal.SIGXCPU, previous)


def _over_cpu(signum: int, frame: Any) -> None:
    raise CpuExceeded()
