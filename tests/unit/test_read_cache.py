"""The per-process reference-data cache: how long a value lives, who loads it, and what a write forgets."""

from __future__ import annotations

import anyio
import pytest

from app.db.cache import ReadCache

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Source:
    """What the database holds, and how often it was asked."""

    def __init__(self, value: str = "v1") -> None:
        self.value = value
        self.loads = 0
        self.gate: anyio.Event | None = None
        self.fail: Exception | None = None

    async def load(self) -> str:
        self.loads += 1
        seen = self.value
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return seen


async def test_a_value_is_served_from_memory_until_its_ttl_runs_out():
    clock, source = Clock(), Source()
    cache = ReadCache[str](2.0, clock=clock)
    assert await cache.get("k", source.load) == "v1"
    source.value = "v2"
    clock.now += 1.9
    assert await cache.get("k", source.load) == "v1"
    clock.now += 0.2
    assert await cache.get("k", source.load) == "v2"
    assert source.loads == 2


async def test_keys_are_cached_apart():
    source = Source()
    cache = ReadCache[str](60, clock=Clock())
    await cache.get(("en", None), source.load)
    await cache.get(("fr", "Paris"), source.load)
    await cache.get(("en", None), source.load)
    assert source.loads == 2


async def test_a_ttl_of_zero_reads_every_time():
    source = Source()
    cache = ReadCache[str](0)
    for _ in range(3):
        await cache.get("k", source.load)
    assert source.loads == 3


async def test_invalidate_makes_the_next_read_fresh():
    source = Source()
    cache = ReadCache[str](60, clock=Clock())
    await cache.get("k", source.load)
    source.value = "v2"
    cache.invalidate()
    assert await cache.get("k", source.load) == "v2"


async def test_concurrent_misses_share_one_load():
    source = Source()
    source.gate = anyio.Event()
    cache = ReadCache[str](60, clock=Clock())
    results: list[str] = []

    async def reader() -> None:
        results.append(await cache.get("k", source.load))

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(reader)
        await anyio.sleep(0.01)
        source.gate.set()
    assert results == ["v1"] * 20 and source.loads == 1


async def test_a_load_that_overlaps_a_write_is_not_kept_and_later_reads_do_not_wait_on_it():
    source = Source()
    source.gate = anyio.Event()
    cache = ReadCache[str](60, clock=Clock())
    stale: list[str] = []
    async with anyio.create_task_group() as tg:
        async def early_reader() -> None:
            stale.append(await cache.get("k", source.load))

        tg.start_soon(early_reader)
        await anyio.sleep(0.01)  # the early read is in flight, holding "v1"
        source.value = "v2"
        cache.invalidate()  # the write committed
        source.gate.set()
        fresh = await cache.get("k", source.load)  # a read after the commit starts its own load
    assert stale == ["v1"] and fresh == "v2"
    source.gate = None
    assert await cache.get("k", source.load) == "v2" and source.loads == 2


async def test_a_failed_load_reaches_every_waiter_and_is_not_cached():
    source = Source()
    source.gate, source.fail = anyio.Event(), RuntimeError("database down")
    cache = ReadCache[str](60, clock=Clock())
    errors: list[BaseException] = []

    async def reader() -> None:
        try:
            await cache.get("k", source.load)
        except RuntimeError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(reader)
        await anyio.sleep(0.01)
        source.gate.set()
    assert len(errors) == 3 and source.loads == 1
    source.gate, source.fail = None, None
    assert await cache.get("k", source.load) == "v1" and source.loads == 2


async def test_when_the_loading_caller_is_cancelled_a_waiter_loads_for_itself():
    source = Source()
    source.gate = anyio.Event()
    cache = ReadCache[str](60, clock=Clock())
    got: list[str] = []
    loader_scope = anyio.CancelScope()

    async def loader() -> None:
        with loader_scope:
            await cache.get("k", source.load)

    async def waiter() -> None:
        got.append(await cache.get("k", source.load))

    async with anyio.create_task_group() as tg:
        tg.start_soon(loader)
        await anyio.sleep(0.01)
        tg.start_soon(waiter)
        await anyio.sleep(0.01)
        loader_scope.cancel()
        await anyio.sleep(0.01)
        source.gate.set()
    assert got == ["v1"] and source.loads == 2


async def test_the_number_of_keys_is_bounded():
    source = Source()
    cache = ReadCache[str](60, clock=Clock(), max_entries=3)
    for key in range(10):
        await cache.get(key, source.load)
    before = source.loads
    await cache.get(9, source.load)  # the latest key survived the trimming
    assert source.loads == before
    await cache.get(0, source.load)  # an early one did not
    assert source.loads == before + 1


async def test_a_value_read_before_a_write_is_not_kept_after_it():
    source = Source()
    source.gate = anyio.Event()
    cache = ReadCache[str](60, clock=Clock())
    async with anyio.create_task_group() as tg:
        tg.start_soon(cache.get, "k", source.load)
        await anyio.sleep(0.01)  # the read is in flight with "v1"
        source.value = "v2"
        cache.invalidate()
        source.gate.set()  # and completes after the write
    source.gate = None
    assert await cache.get("k", source.load) == "v2"


async def test_when_full_expired_entries_make_room_before_fresh_ones():
    clock, source = Clock(), Source()
    cache = ReadCache[str](10, clock=clock, max_entries=3)
    await cache.get("old-1", source.load)
    await cache.get("old-2", source.load)
    clock.now += 8
    await cache.get("fresh", source.load)
    clock.now += 3  # old-1 and old-2 have expired, "fresh" has not
    await cache.get("new", source.load)
    loads = source.loads
    await cache.get("fresh", source.load)
    assert source.loads == loads
