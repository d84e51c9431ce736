"""This worker's analysis processes, shared fairly and capped in processor time and memory.

Analysing a file runs in a worker process (parsing would otherwise hold the GIL against the event
loop). There are ``slots`` of them per server worker. A crafted file can keep one busy for as long
as its parser lets it, so:

- a caller has at most ``per_caller`` calls fetching or analysing at once (an account; an anonymous
  caller as the limits count it: its address and ChatGPT's ``openai/subject``, which only narrows,
  as anonymous ChatGPT users share OpenAI's addresses), and all anonymous callers together at most
  ``anonymous`` analyses, whatever they send; a call past a share is refused at once ("busy, retry
  in N s"), before its file is fetched when the share is already full then;
- a call within its share waits for a free slot at most ``wait`` seconds, then is refused the
  same way;
- an analysis gets ``cpu_seconds`` of processor time (``RLIMIT_CPU`` in its process, counted from
  its start: waiting for a slot is not counted); past it the analysis stops and nothing is kept.
  A parser stuck where no signal reaches it (inside C code) is killed at ``wall_seconds``;
- an analysis process's address space stays within ``memory_bytes`` over what it mapped at its
  first analysis (``RLIMIT_AS``): past it an allocation fails, and the analysis leaves out what it
  could not hold (an image's pixels), or stops with nothing kept and its process ends (what the
  allocator kept of the failed call would count against the next ones): the next starts afresh.

The slots are this process's: the CPU they share is this pod's. What one caller may do across the
fleet is its budgets' (``app.limits``, counted in Redis), which bound how often it starts one.
"""

from __future__ import annotations

import functools
import math
import os
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
import structlog

from app.features.files.ingest import FileRejected
from app.limits import Caller
from app.wording import Wording

say = Wording(__file__)
log = structlog.get_logger(__name__)
T = TypeVar("T")
SLOT_WAIT_S = 15.0  # a call within its share waits this long for a free slot
RETRY_MIN_S = 5
MiB = 1024 * 1024


# Whose share of the analyser is used up, and whether the file was fetched already.
SHARES = {
    ("yours", False): say.mark("Too many files are being analysed for you right now; nothing was "
                               "fetched or kept. Try again in {seconds} s."),
    ("anonymous", False): say.mark("Too many files are being analysed for people who are not "
                                   "signed in right now; nothing was fetched or kept. Try again "
                                   "in {seconds} s."),
    ("anonymous", True): say.mark("Too many files are being analysed for people who are not "
                                  "signed in right now; nothing was kept. Try again in {seconds} "
                                  "s."),
    ("all", True): say.mark("Too many files are being analysed right now; nothing was kept. Try "
                            "again in {seconds} s."),
}


class AnalysisBusy(FileRejected):
    """No slot for this call now: the person and the model are told when to try again."""

    def __init__(self, retry_after: int, *, share: str, fetched: bool = False) -> None:
        super().__init__(
            say(SHARES[share, fetched], seconds=retry_after),
            f"Tell the user the file analyser is busy, then call this tool again with the same "
            f"file in about {retry_after} seconds; do not retry sooner.",
        )
        self.retry_after = retry_after


class CpuExceeded(BaseException):
    """Raised in the analysis process at its processor-time cap. A BaseException: the analysers turn
    every Exception into a partial result, and this one must end the analysis."""


class AnalysisStopped(FileRejected):
    """The analysis used its processor time or its memory, or its process ended: nothing was
    kept."""


@dataclass
class AnalysisSlots:
    slots: int
    cpu_seconds: float
    memory_bytes: int = 128 * MiB
    per_caller: int = 0  # 0: half the slots (at least one)
    anonymous: int = 0  # 0: half the slots (at least one)
    per_address: int = 0  # 0: twice ``anonymous``
    wait: float = SLOT_WAIT_S
    wall: float = 0  # 0: 3 x cpu_seconds + 5 (wall_seconds)
    _held: Counter[str] = field(default_factory=Counter)
    _started: dict[object, float] = field(default_factory=dict)  # running analysis -> its start
    _anonymous_held: int = 0
    _free: anyio.CapacityLimiter | None = None
    _processes: anyio.CapacityLimiter | None = None

    def __post_init__(self) -> None:
        half = max(1, self.slots // 2)
        self.per_caller = self.per_caller or half
        self.anonymous = self.anonymous or half
        # Anonymous calls from one address, fetching or analysing: twice the anonymous share, so that
        # ChatGPT users behind one of OpenAI's addresses are not served one at a time, while one
        # client rotating hints cannot start downloads without end.
        self.per_address = self.per_address or 2 * self.anonymous

    @property
    def wall_seconds(self) -> float:
        # Processes are at most the cores, so wall time is about CPU time; the margin covers a pod
        # whose cores its event loops share.
        return self.wall or 3 * self.cpu_seconds + 5

    def _limiters(self) -> tuple[anyio.CapacityLimiter, anyio.CapacityLimiter]:
        # Made in the event loop that uses them (anyio's limiters belong to one).
        if self._free is None or self._processes is None:
            self._free = anyio.CapacityLimiter(self.slots)
            self._processes = anyio.CapacityLimiter(self.slots)  # never waited on: _free admits
        return self._free, self._processes

    def check(self, caller: Caller) -> None:
        """Raise ``AnalysisBusy`` if the caller's share, its address's (anonymous: a hint is the
        client's to choose), or the anonymous callers', is full now."""
        if self._held[caller.key] >= self.per_caller:
            raise AnalysisBusy(self._retry_after(), share="yours")
        if caller.account is None and (self._anonymous_held >= self.anonymous
                                       or self._held[_address_key(caller)] >= self.per_address):
            raise AnalysisBusy(self._retry_after(), share="anonymous")

    @contextmanager
    def claim(self, caller: Caller) -> Iterator[None]:
        """The caller's share, held from before its file is fetched to the end of its analysis, or
        ``AnalysisBusy``: its own calls at once are refused before they fetch anything. The
        anonymous callers' share and a slot are taken only for the analysis (``slot``): a slow
        download holds no one else's analysis back."""
        self.check(caller)  # no await between the check and the count: one decision
        keys = [caller.key] if caller.account is not None else [caller.key, _address_key(caller)]
        for key in keys:
            self._held[key] += 1
        try:
            yield
        finally:
            for key in keys:
                self._held[key] -= 1
                if not self._held[key]:
                    del self._held[key]

    @asynccontextmanager
    async def slot(self, caller: Caller) -> AsyncIterator[None]:
        """The anonymous callers' share (for an anonymous caller) and a free slot, or
        ``AnalysisBusy``."""
        anonymous = caller.account is None
        if anonymous and self._anonymous_held >= self.anonymous:
            raise AnalysisBusy(self._retry_after(), share="anonymous",
                               fetched=True)
        self._anonymous_held += anonymous
        try:
            free, _ = self._limiters()
            acquired = False
            with anyio.move_on_after(self.wait):
                await free.acquire()
                acquired = True
            if not acquired:
                raise AnalysisBusy(self._retry_after(), share="all", fetched=True)
            token = object()
            self._started[token] = time.monotonic()
            try:
                yield
            finally:
                del self._started[token]
                free.release()
        finally:
            self._anonymous_held -= anonymous

    def _retry_after(self) -> int:
        """When the first running analysis should end: its processor-time cap from its start (an
        estimate: on a busy pod it runs longer), never under ``RETRY_MIN_S``, so that callers told
        to come back do not come every second."""
        now = time.monotonic()
        left = min((self.cpu_seconds - (now - began) for began in self._started.values()),
                   default=self.cpu_seconds)
        return max(RETRY_MIN_S, math.ceil(left))

    async def run(self, caller: Caller, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in an analysis process, in a slot and within the caps (the caller's own
        share is ``claim``'s)."""
        async with self.slot(caller):
            _, processes = self._limiters()
            call = functools.partial(capped, self.cpu_seconds, self.memory_bytes, func, *args)
            with anyio.move_on_after(self.wall_seconds):
                try:
                    return await anyio.to_process.run_sync(
                        call, cancellable=True, limiter=processes
                    )
                except CpuExceeded:
                    raise self._stopped("cpu") from None
                except anyio.BrokenWorkerProcess:
                    # Past its memory (capped() ends it), killed, or it could not start.
                    raise self._stopped("ended") from None
        raise self._stopped("wall")  # anyio killed the process when the scope was cancelled

    def _stopped(self, reason: str) -> AnalysisStopped:
        log.warning("files.analysis_stopped", reason=reason, cpu_seconds=self.cpu_seconds,
                    memory_bytes=self.memory_bytes)
        if reason == "cpu":
            said = say("Analysing the file took more than {seconds} s of processor time and was "
                       "stopped; nothing was kept.", seconds=f"{self.cpu_seconds:g}")
        elif reason == "wall":
            said = say("Analysing the file was still running after {seconds} s and was stopped; "
                       "nothing was kept.", seconds=f"{self.wall_seconds:g}")
        else:
            said = say("Analysing the file needed more than {mib} MiB of memory, or its process "
                       "ended otherwise, and was stopped; nothing was kept.",
                       mib=self.memory_bytes // MiB)
        return AnalysisStopped(
            said,
            "Tell the user this file is too complex to analyse here; a smaller or simpler file "
            "(fewer pages, a plain export) can be analysed.",
        )


# In the analysis process: whether a call runs under its cap. SIGXCPU is taken by one handler for
# the process's life, and raises only while this is set: a signal that comes late (while the limit
# is being lifted, or between calls) is dropped instead of ending the next call or the worker.
_capped = False
# In the analysis process: what it mapped at its first capped call, which every call's memory cap
# counts from. Counted from each call's start instead, what a call left mapped (the allocator
# keeps some) was added to the next call's room: a worker fed bombs in turn grew by 20 MiB a call.
_baseline: int | None = None
MEMORY_EXIT = 70  # the analysis process's exit status past its memory cap


def _address_key(caller: Caller) -> str:
    return f"address:{caller.address}"


def capped(cpu_seconds: float, memory_bytes: int, func: Callable[..., T], *args: Any) -> T:
    """In the analysis process: ``func(*args)`` with ``cpu_seconds`` more of processor time than
    this process has used so far, and its address space within ``memory_bytes`` over what it
    mapped at its first call. The process is reused, so the limits are set per call and lifted
    after, to the hard limits (an unprivileged process may raise its soft limit up to it, and the
    hard one is never lowered: it could not be raised again). A ``MemoryError`` that reaches here
    ends the process: the parent sees it end (``run``'s stop)."""
    global _capped, _baseline
    if signal.getsignal(signal.SIGXCPU) is not _over_cpu:
        signal.signal(signal.SIGXCPU, _over_cpu)
    if _baseline is None:
        _baseline = _mapped_bytes()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    _, as_hard = resource.getrlimit(resource.RLIMIT_AS)
    cpu = _within(math.ceil(usage.ru_utime + usage.ru_stime + cpu_seconds), cpu_hard)
    space = _within(_baseline + memory_bytes, as_hard) if _baseline is not None else as_hard
    _capped = True
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu_hard))
        resource.setrlimit(resource.RLIMIT_AS, (space, as_hard))
        return func(*args)
    except MemoryError:
        pass  # ends the process once the limits are lifted (below)
    finally:
        _capped = False
        resource.setrlimit(resource.RLIMIT_AS, (as_hard, as_hard))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_hard, cpu_hard))
    os._exit(MEMORY_EXIT)


def _within(limit: int, hard: int) -> int:
    return limit if hard == resource.RLIM_INFINITY else min(limit, hard)


def _mapped_bytes() -> int | None:
    """This process's address space now (Linux's /proc; elsewhere None: no memory cap)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _over_cpu(signum: int, frame: Any) -> None:
    if _capped:
        raise CpuExceeded()
