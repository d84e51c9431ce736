"""The database threads' hop: what a job's caller gets, what cancelling it does, and what one wake-up carries."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import anyio
import anyio.to_thread
import pytest

from app.tuning import threads
from app.tuning.threads import ThreadLane

pytestmark = [pytest.mark.anyio, pytest.mark.tuning]
request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


def wait_until(condition, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("not reached in time")
        time.sleep(0.001)


async def test_a_job_returns_its_value_and_raises_its_error_on_a_thread_of_its_own() -> None:
    lane = ThreadLane(1, "t")

    def fail() -> None:
        raise KeyError("missing")

    assert await lane.run(lambda a, b: (a + b, threading.current_thread().name), 2, 3) == (5, "t-1")
    with pytest.raises(KeyError, match="missing"):
        await lane.run(fail)
    assert threading.current_thread().name != "t-1"


async def test_a_job_sees_its_callers_context_variables() -> None:
    lane = ThreadLane(1, "t")

    async def call(value: str) -> str:
        request_id.set(value)
        return await lane.run(request_id.get)

    async with anyio.create_task_group() as tg:
        seen: dict[str, str] = {}

        async def one(value: str) -> None:
            seen[value] = await call(value)

        for value in ("a", "b", "c"):
            tg.start_soon(one, value)
    assert seen == {"a": "a", "b": "b", "c": "c"}


async def test_a_queued_job_whose_caller_is_cancelled_never_runs() -> None:
    lane = ThreadLane(1, "t")
    release = threading.Event()
    ran: list[str] = []
    first = asyncio.ensure_future(lane.run(lambda: (release.wait(5), ran.append("first"))))
    wait_until(lambda: lane._idle == 0 and not lane._queued)  # the thread holds the first job
    second = asyncio.ensure_future(lane.run(ran.append, "second"))
    await asyncio.sleep(0.01)
    second.cancel()
    await asyncio.sleep(0.01)
    release.set()
    await first
    with pytest.raises(asyncio.CancelledError):
        await second
    await lane.run(ran.append, "third")
    assert ran == ["first", "third"]


async def test_a_started_job_runs_to_its_end_before_its_cancelled_caller_gives_up() -> None:
    lane = ThreadLane(1, "t")
    started, release = threading.Event(), threading.Event()
    finished: list[float] = []
    returned: list[str] = []

    def job() -> str:
        started.set()
        release.wait(5)
        finished.append(time.monotonic())
        return "done"

    with anyio.move_on_after(5) as scope:  # the deadline of a call whose job already began
        async with anyio.create_task_group() as tg:
            async def call() -> None:
                returned.append(await lane.run(job))

            tg.start_soon(call)
            await anyio.to_thread.run_sync(started.wait, 5)
            threading.Timer(0.2, release.set).start()
            tg.cancel_scope.cancel()
    given_up = time.monotonic()
    assert not scope.cancelled_caught
    assert finished and finished[0] <= given_up  # the caller left only once the job had ended
    assert returned == ["done"]  # with what it gave: a committed write's caller still learns of its commit


async def test_a_job_raising_stop_iteration_fails_its_caller_and_no_other() -> None:
    lane = ThreadLane(1, "t")
    failing = asyncio.ensure_future(lane.run(next, iter(())))
    after = asyncio.ensure_future(lane.run(lambda: "after"))
    with pytest.raises(RuntimeError, match="StopIteration"):
        await failing
    assert await after == "after"


async def test_results_finished_before_the_loop_wakes_travel_in_one_wake_up(monkeypatch) -> None:
    lane = ThreadLane(1, "t")
    loop = asyncio.get_running_loop()
    wakeups: list[object] = []
    real = loop.call_soon_threadsafe
    monkeypatch.setattr(loop, "call_soon_threadsafe", lambda *a, **k: (wakeups.append(a), real(*a, **k))[1])
    ran: list[int] = []
    calls = [asyncio.ensure_future(lane.run(ran.append, n)) for n in range(10)]
    await asyncio.sleep(0)  # every call has queued its job
    wait_until(lambda: len(ran) == 10)  # the loop is held here while the thread runs all ten
    await asyncio.gather(*calls)
    assert ran == list(range(10))
    assert len(wakeups) == 1


async def test_no_more_jobs_run_at_once_than_the_lane_has_threads() -> None:
    lane = ThreadLane(2, "t")
    running, most = 0, 0
    lock = threading.Lock()

    def job() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    await asyncio.gather(*(lane.run(job) for _ in range(8)))
    assert most == 2


async def test_a_burst_spreads_over_the_threads_an_idle_one_alone_would_not_take() -> None:
    lane = ThreadLane(3, "t")
    await lane.run(lambda: None)  # one thread, idle now
    wait_until(lambda: lane._idle == 1)
    barrier = threading.Barrier(3, timeout=5)  # passes only if three jobs run at once
    assert sorted(await asyncio.gather(*(lane.run(barrier.wait) for _ in range(3)))) == [0, 1, 2]


async def test_idle_threads_end_and_the_next_job_starts_another(monkeypatch) -> None:
    monkeypatch.setattr(threads, "IDLE_S", 0.05)
    lane = ThreadLane(1, "idle-lane")
    await lane.run(lambda: None)
    wait_until(lambda: lane._threads == 0)
    assert not [t for t in threading.enumerate() if t.name.startswith("idle-lane")]
    assert await lane.run(lambda: "again") == "again"
    lane.close()
    wait_until(lambda: lane._threads == 0)
