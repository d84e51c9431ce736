"""CPU per hop from the event loop to a database thread: anyio.to_thread.run_sync against app.tuning.threads.ThreadLane.

16 tasks each run jobs of ~30 µs of Python (a stand-in for a SQLite read) through each hop, back to back, in
one process; printed: wall time and process CPU per job, and the job alone for reference.

Usage: ``python bench/hop.py [--jobs 20000] [--concurrency 16]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app.tuning.threads import ThreadLane  # noqa: E402


def work() -> int:
    total = 0
    for i in range(1500):
        total += i
    return total


async def measure(name: str, hop, jobs: int, concurrency: int) -> None:
    async def worker(n: int) -> None:
        for _ in range(n):
            await hop(work)

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(jobs // concurrency) for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{name:24s} wall {wall / jobs * 1e6:6.1f} µs/job   cpu {cpu / jobs * 1e6:6.1f} µs/job")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    cpu = time.process_time()
    for _ in range(2000):
        work()
    print(f"{'the job alone':24s} cpu {(time.process_time() - cpu) / 2000 * 1e6:6.1f} µs/job")
    one, twenty = anyio.CapacityLimiter(1), anyio.CapacityLimiter(20)
    lane1, lane20 = ThreadLane(1, "hop1"), ThreadLane(20, "hop20")
    for _ in range(2):  # twice: the first pass warms up
        await measure("anyio, 1 thread", lambda f: anyio.to_thread.run_sync(f, limiter=one), args.jobs,
                      args.concurrency)
        await measure("anyio, 20 threads", lambda f: anyio.to_thread.run_sync(f, limiter=twenty), args.jobs,
                      args.concurrency)
        await measure("ThreadLane(1)", lane1.run, args.jobs, args.concurrency)
        await measure("ThreadLane(20)", lane20.run, args.jobs, args.concurrency)


if __name__ == "__main__":
    asyncio.run(main())
