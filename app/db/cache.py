"""A per-process cache for read-mostly reference data (the zoo's animals, the cafés).

Every database read costs a thread hop and a session; for a table that changes only when
it is seeded, or now and then by a like, that is the whole cost of a request. A cached
value lives ``ttl`` seconds:

- in the process that changed the data, the writer calls ``invalidate()`` after its commit,
  so its own next read is fresh;
- in every other worker and replica the value is at most ``ttl`` seconds old. That bound
  is the contract, stated in the settings (``APP_CACHE_TTL``); there is no cross-process
  signal to wait for or to lose.

Concurrent misses share one load (no stampede when an entry expires under load), and a
load that overlaps an ``invalidate()`` is handed to its callers but not kept, so a value
read before a commit never outlives it. ``ttl <= 0`` turns the cache off.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

import anyio

V = TypeVar("V")


def _copy(error: Exception) -> Exception:
    """A waiter's own instance of the loader's error (same type and message), so tracebacks don't pile up."""
    try:
        return copy.copy(error)
    except Exception:
        return error


class _Load(Generic[V]):
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: tuple[V] | None = None  # (value,) once the load returned: V may itself be None
        self.error: BaseException | None = None


class ReadCache(Generic[V]):
    def __init__(self, ttl: float, *, clock: Callable[[], float] = time.monotonic, max_entries: int = 128) -> None:
        self.ttl = ttl
        self._clock = clock
        self._max_entries = max_entries
        self._entries: dict[Hashable, tuple[float, V]] = {}
        self._loads: dict[Hashable, _Load[V]] = {}
        self._generation = 0

    async def get(self, key: Hashable, load: Callable[[], Awaitable[V]]) -> V:
        if self.ttl <= 0:
            return await load()
        entry = self._entries.get(key)
        if entry is not None and self._clock() < entry[0]:
            return entry[1]
        pending = self._loads.get(key)
        if pending is not None:  # someone is loading it already: wait for that one load
            await pending.done.wait()
            if pending.result is not None:  # it returned; if not, it set error (failed or cancelled)
                return pending.result[0]
            if isinstance(pending.error, Exception):
                raise _copy(pending.error) from pending.error
            return await self.get(key, load)  # that load was cancelled, not failed: try again
        pending = self._loads[key] = _Load()
        generation = self._generation
        try:
            value = await load()
        except BaseException as exc:
            pending.error = exc
            raise
        else:
            pending.result = (value,)
            if generation == self._generation:  # no write committed while it was read
                self._make_room()
                self._entries[key] = (self._clock() + self.ttl, value)
            return value
        finally:
            if self._loads.get(key) is pending:
                del self._loads[key]
            pending.done.set()

    def _make_room(self) -> None:
        if len(self._entries) < self._max_entries:
            return
        now = self._clock()
        for stale in [k for k, (expires, _) in self._entries.items() if expires <= now]:
            del self._entries[stale]
        while len(self._entries) >= self._max_entries:  # all fresh: the oldest inserted goes first
            del self._entries[next(iter(self._entries))]

    def invalidate(self) -> None:
        """Forget everything, and anything being loaded right now: call after a committed write."""
        self._generation += 1
        self._entries.clear()
        self._loads.clear()  # a read that began before the commit serves only those already waiting on it

    def forget(self, stale: Callable[[Hashable], bool]) -> None:
        """Forget the keys ``stale`` picks, and anything being loaded right now (the load began before the write
        that made those keys stale, and may be one of them): call after a committed write that changed them."""
        self._generation += 1
        for key in [k for k in self._entries if stale(k)]:
            del self._entries[key]
        self._loads.clear()
