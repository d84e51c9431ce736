"""Reservations against several limits at once, on one counter, with a fallback when the shared one is down."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import structlog

from app.limits.caller import Budget, Caller, Sharing
from app.limits.checks import Check, describe
from app.limits.counters import Counter, LocalCounter, RedisCounter, shared_store_errors

log = structlog.get_logger("app.limits")
T = TypeVar("T")
# After a failure, the shared counter is tried again this many seconds later (meanwhile: fallback or refusal).
RETRY_INTERVAL = 5.0


class OverLimit(Exception):
    """A check refused: ``retry_after`` whole seconds until its window ends."""

    def __init__(self, check: Check, retry_after: int) -> None:
        super().__init__(f"{check.name}: over {describe(check.rate)} for {check.label}; retry in {retry_after} s")
        self.limit = check.name
        self.label = check.label
        self.rate = describe(check.rate)
        self.amount = check.rate.amount
        self.period = check.rate.get_expiry()
        self.cost = check.cost
        self.retry_after = retry_after


class LimitsUnavailable(Exception):
    """The shared counter cannot be reached and this limit is not counted anywhere else (it fails closed)."""


@dataclass
class Reservation:
    """What ``Limits.acquire`` counted; ``release()`` gives exactly that back, on the counter that took it, to
    the windows it was counted in (a window that has ended since is left alone, and so is the next one)."""

    counter: Counter | None
    taken: list[tuple[Check, float]] = field(default_factory=list)  # with the monotonic time of each hit
    _released: bool = False

    @property
    def checks(self) -> list[Check]:
        return [check for check, _ in self.taken]

    async def release(self) -> None:
        if self._released or self.counter is None:
            return
        self._released = True
        with anyio.CancelScope(shield=True):  # a cancelled caller still gives its reservation back
            for check, at in self.taken:
                try:
                    await self.counter.release(check.rate, check.ident, check.cost, time.monotonic() - at)
                except shared_store_errors() as exc:  # its window ends anyway; the next ones are still tried
                    log.warning("limits.release_failed", limit=check.name, error=type(exc).__name__)


class Limits:
    """Every count the server keeps: ``counter`` (Redis for the fleet, or this process) and, beside a shared
    counter, this process's own as the fallback while the shared one cannot be reached."""

    def __init__(self, counter: Counter, fallback: Counter | None = None, *, sharing: Sharing | None = None,
                 retry_interval: float = RETRY_INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.counter = counter
        # Told the name of every limit that refuses (the composition root sets the metrics' refusals counter).
        self.on_refused: Callable[[str], None] | None = None
        self.fallback = fallback
        self.sharing = sharing or Sharing()
        self.retry_interval = retry_interval
        self.clock = clock
        self._down_since: float | None = None
        self._retry_at = 0.0

    @classmethod
    def in_process(cls, sharing: Sharing | None = None) -> Limits:
        return cls(LocalCounter(), sharing=sharing)

    @classmethod
    def redis(cls, url: str, prefix: str, sharing: Sharing | None = None) -> Limits:
        return cls(RedisCounter(url, prefix), LocalCounter(), sharing=sharing)

    @property
    def shared(self) -> bool:
        return self.counter.shared

    @property
    def where(self) -> str:
        """Where limits are counted now, for the readiness probe."""
        if not self.counter.shared:
            return "in-process"
        return "redis" if self._down_since is None else "in-process (redis unreachable)"

    # --- the counter in use -------------------------------------------------------------------------
    async def _run(self, work: Callable[[Counter], Awaitable[T]], *, strict: bool) -> T:
        if self.fallback is None:
            return await work(self.counter)
        if self.clock() >= self._retry_at:
            try:
                result = await work(self.counter)
            except shared_store_errors() as exc:
                self._failed(exc)
            else:
                self._answered()
                return result
        if strict:
            raise LimitsUnavailable("the shared limit store (APP_REDIS_URL) cannot be reached")
        return await work(self.fallback)

    def _failed(self, exc: BaseException) -> None:
        self._retry_at = self.clock() + self.retry_interval
        if self._down_since is None:  # once per outage, not once per request
            self._down_since = self.clock()
            log.warning("limits.shared_store_unavailable", error=type(exc).__name__,
                        detail=str(exc)[:200], fallback="in-process counts; sign-in refused")

    def _answered(self) -> None:
        if self._down_since is not None:
            log.info("limits.shared_store_restored", down_s=round(self.clock() - self._down_since, 1))
            self._down_since = None

    # --- counting -----------------------------------------------------------------------------------
    async def acquire(self, checks: Sequence[Check], *, strict: bool = False) -> Reservation:
        """Count every check, or none: the first that refuses gives back what this call counted and raises
        ``OverLimit``. ``strict``: with the shared counter unreachable, raise ``LimitsUnavailable`` instead of
        counting in this process."""
        if not checks:
            return Reservation(None)

        async def take(counter: Counter) -> Reservation:
            taken = Reservation(counter)
            try:
                for check in checks:
                    admitted = await counter.hit(check.rate, check.ident, check.cost)
                    # After the hit: the window it landed in is at least as old as this, a later one younger.
                    taken.taken.append((check, time.monotonic()))
                    if not admitted:
                        raise OverLimit(check, max(1, math.ceil(await counter.resets_in(check.rate, check.ident))))
            except BaseException:
                # Refused, cancelled or failed half-way: what this call counted goes back (the refused hit's
                # own increment too, so a flood of refusals never keeps a window full).
                await taken.release()
                raise
            return taken

        try:
            return await self._run(take, strict=strict)
        except OverLimit as over:
            log.info("limits.refused", limit=over.limit, retry_after=over.retry_after)
            if self.on_refused is not None:
                self.on_refused(over.limit)
            raise

    async def refusal(self, checks: Sequence[Check]) -> OverLimit | None:
        """The check that would refuse its cost now, counting nothing (a look before expensive work, which the
        caller refuses when this returns one)."""

        async def look(counter: Counter) -> OverLimit | None:
            for check in checks:
                if await counter.used(check.rate, check.ident) + check.cost > check.rate.amount:
                    retry = await counter.resets_in(check.rate, check.ident)
                    return OverLimit(check, max(1, math.ceil(retry)))
            return None

        over = await self._run(look, strict=False)
        if over is not None and self.on_refused is not None:  # the caller refuses on it: a refusal like any other
            self.on_refused(over.limit)
        return over

    def checks(self, budget: Budget, caller: Caller, cost: int = 1) -> list[Check]:
        return budget.checks(caller, self.sharing, cost)

    async def charge(self, budget: Budget, caller: Caller, cost: int = 1) -> Reservation:
        return await self.acquire(self.checks(budget, caller, cost))

    # --- lifecycle ----------------------------------------------------------------------------------
    async def start(self) -> None:
        """Say where limits are counted; an unreachable shared store is reported now, not at the first refusal."""
        if not self.counter.shared:
            log.info("limits.counting", where="in-process")
            return
        try:
            await self.counter.ping()
        except shared_store_errors() as exc:
            self._failed(exc)
        else:
            log.info("limits.counting", where="redis")

    async def aclose(self) -> None:
        await self.counter.aclose()
