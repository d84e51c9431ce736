"""What a limit costs a request: one anonymous budget charge (three levels) per call, on this process's counter
with many live keys, and on Redis. Prints microseconds per charge.

    .venv/bin/python bench/budgets.py [--redis redis://127.0.0.1:6379/0] [--keys 1,1000,10000,50000]

The in-process counter must not slow down as keys pile up (any client can make keys: one per
``openai/subject`` it invents); Redis costs a round trip per level.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from app.limits import Budget, Caller, Limits, parse_rate

BUDGET = Budget("bench", parse_rate("1000000/minute"))
CALLS = 3000


async def charge_many(limits: Limits, live_keys: int) -> float:
    callers = [Caller.of(None, f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}", f"u{i}") for i in range(live_keys)]
    for caller in callers:
        await limits.charge(BUDGET, caller)
    started = time.perf_counter()
    for i in range(CALLS):
        await limits.charge(BUDGET, callers[i % live_keys])
        await asyncio.sleep(0)  # yield as a server does between requests (background work gets its turn)
    return (time.perf_counter() - started) / CALLS * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis", help="also measure a Redis at this URL (keys under a prefix of their own)")
    parser.add_argument("--keys", default="1,1000,10000,50000")
    args = parser.parse_args()
    for keys in (int(k) for k in args.keys.split(",")):
        print(f"in-process, {keys:>6} callers live: {await charge_many(Limits.in_process(), keys):8.1f} us a charge")
    if args.redis:
        prefix = f"bench-{uuid.uuid4().hex[:8]}"
        limits = Limits.redis(args.redis, prefix)
        try:
            print(f"redis,          100 callers live: {await charge_many(limits, 100):8.1f} us a charge")
        finally:
            client = limits.counter.client  # type: ignore[attr-defined]
            keys = [k async for k in client.scan_iter(f"{prefix}:*")]
            if keys:
                await client.delete(*keys)
            await limits.aclose()


if __name__ == "__main__":
    asyncio.run(main())
