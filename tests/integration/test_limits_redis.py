"""app.limits on a real Redis: one count for every worker, exact give-backs, and an outage made by cutting a TCP
proxy between the limits and Redis (Redis itself keeps running: CI's is shared)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
import redis

from app.limits import Check, Limits, LimitsUnavailable, OverLimit, parse_rate
from app.limits.counters import LocalCounter, RedisCounter
from tests.e2e.server import free_port
from tests.tcpproxy import proxy_to

pytestmark = pytest.mark.anyio
FIVE = parse_rate("5/hour")  # an hour: no test straddles the end of its window


def check(key: str = "k", rate=FIVE) -> Check:
    return Check("test", rate, key, "this key")


async def outcomes(limits: Limits, n: int, c: Check | None = None, strict: bool = False) -> list[str]:
    results = []
    for _ in range(n):
        try:
            await limits.acquire([c or check()], strict=strict)
            results.append("ok")
        except OverLimit:
            results.append("over")
        except LimitsUnavailable:
            results.append("unavailable")
    return results


async def test_two_workers_sharing_redis_admit_exactly_the_limit_under_concurrency(redis_url, redis_prefix):
    # Twenty connections opened at once: on a machine running CI beside a fork's suite, some took
    # longer than the 0.5 s a request waits for Redis (REDIS_TIMEOUT). What is counted here is the
    # atomicity, not the timeout (tests/e2e/test_limits.py cuts Redis away): 5 s each.
    workers = [Limits(RedisCounter(redis_url, redis_prefix, timeout=5.0), LocalCounter())
               for _ in range(2)]
    admitted: list[bool] = []

    async def guess(limits: Limits) -> None:
        try:
            await limits.acquire([check()], strict=True)
            admitted.append(True)
        except OverLimit:
            admitted.append(False)

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(guess, workers[i % 2])
    assert admitted.count(True) == 5
    assert await workers[0].counter.used(FIVE, check().ident) == 5  # refusals gave their increments back
    for limits in workers:
        await limits.aclose()


async def test_keys_carry_the_prefix_and_no_address_or_name_in_clear(redis_url, redis_prefix):
    limits = Limits.redis(redis_url, redis_prefix)
    await limits.acquire([Check("signin.name", FIVE, "203.0.113.7|alice", "x")])
    keys = [k.decode() for k in redis.Redis.from_url(redis_url).scan_iter(f"{redis_prefix}:*")]
    assert len(keys) == 1 and keys[0].startswith(f"{redis_prefix}:LIMITER/signin.name/")
    assert "alice" not in keys[0] and "203.0.113.7" not in keys[0]
    await limits.aclose()


async def test_a_release_gives_back_one_and_never_creates_a_key_or_goes_below_zero(redis_url, redis_prefix):
    counter = RedisCounter(redis_url, redis_prefix)
    c = check()
    await counter.release(c.rate, c.ident, 1, 0.0)  # nothing was counted: nothing is created
    assert not list(redis.Redis.from_url(redis_url).scan_iter(f"{redis_prefix}:*"))
    assert await counter.hit(c.rate, c.ident, 1)
    await counter.release(c.rate, c.ident, 1, 0.0)
    await counter.release(c.rate, c.ident, 1, 0.0)
    assert await counter.used(c.rate, c.ident) == 0
    await counter.aclose()


async def test_a_release_leaves_a_window_that_opened_after_its_hit_alone(redis_url, redis_prefix):
    counter = RedisCounter(redis_url, redis_prefix)
    c = check()
    for _ in range(3):
        await counter.hit(c.rate, c.ident, 1)  # this window is a few ms old
    await counter.release(c.rate, c.ident, 1, 30.0)  # a hit 30 s ago belonged to an earlier window
    assert await counter.used(c.rate, c.ident) == 3
    await counter.release(c.rate, c.ident, 1, 0.0)
    assert await counter.used(c.rate, c.ident) == 2
    await counter.aclose()


async def test_cutting_redis_counts_lax_limits_here_refuses_strict_ones_and_recovers(redis_url, redis_prefix,
                                                                                      json_log):
    with proxy_to(redis_url) as proxy:
        limits = Limits(RedisCounter(proxy.url, redis_prefix), LocalCounter(), retry_interval=0.2)
        await limits.start()
        assert await outcomes(limits, 2) == ["ok", "ok"]  # counted in Redis
        direct = RedisCounter(redis_url, redis_prefix)
        assert await direct.used(FIVE, check().ident) == 2

        proxy.set_mode("refuse")
        started = time.monotonic()
        assert await outcomes(limits, 6) == ["ok"] * 5 + ["over"]  # this process's own count meanwhile
        assert await outcomes(limits, 1, check("signin"), strict=True) == ["unavailable"]
        assert time.monotonic() - started < 2, "an unreachable Redis must cost little, not a retry loop"
        assert await direct.used(FIVE, check().ident) == 2

        proxy.set_mode("forward")
        await anyio.sleep(0.3)  # the retry interval: the shared counter is tried again
        assert await outcomes(limits, 4) == ["ok", "ok", "ok", "over"]  # Redis's count again: 2 + 3
        assert await direct.used(FIVE, check().ident) == 5
        await limits.aclose()
        await direct.aclose()
    events = [e["event"] for e in json_log() if e["event"].startswith("limits.shared")]
    assert events == ["limits.shared_store_unavailable", "limits.shared_store_restored"]


async def test_a_redis_that_hangs_costs_one_short_timeout_then_is_left_alone(redis_url, redis_prefix):
    with proxy_to(redis_url) as proxy:
        limits = Limits(RedisCounter(proxy.url, redis_prefix), LocalCounter(), retry_interval=30)
        proxy.set_mode("blackhole")
        started = time.monotonic()
        assert await outcomes(limits, 1) == ["ok"]
        first = time.monotonic() - started
        started = time.monotonic()
        assert await outcomes(limits, 10) == ["ok"] * 4 + ["over"] * 6
        rest = time.monotonic() - started
        await limits.aclose()
    assert 0.4 <= first < 2, first  # the 0.5 s socket timeout, once
    assert rest < 0.5, rest  # then not tried again until the retry interval is over


async def test_the_start_reports_an_unreachable_redis(redis_url, redis_prefix, json_log):
    with proxy_to(redis_url) as proxy:
        proxy.set_mode("refuse")
        limits = Limits(RedisCounter(proxy.url, redis_prefix), LocalCounter())
        await limits.start()
        await limits.aclose()
    assert [e["event"] for e in json_log() if e["event"].startswith("limits.")] == ["limits.shared_store_unavailable"]


def test_serve_stops_in_one_line_on_a_redis_that_refuses_its_configuration(redis_url, tmp_path):
    refused_db = redis_url.rsplit("/", 1)[0] + "/99"  # Redis has 16 databases unless told otherwise
    env = {**os.environ, "APP_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}", "APP_VAR_DIR": str(tmp_path),
           "APP_REDIS_URL": refused_db}
    port = str(free_port())  # the port is tried before Redis: one nobody listens on
    run = subprocess.run([sys.executable, "-m", "app", "serve", "--port", port],
                         cwd=Path(__file__).parents[2],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert run.stderr.strip() == "serve: APP_REDIS_URL: Redis refused the connection: DB index is out of range"


def test_a_redis_that_does_not_answer_is_no_refusal_of_the_configuration(redis_url):
    from app.limits import check_shared_store

    with proxy_to(redis_url) as proxy:
        proxy.set_mode("refuse")
        assert anyio.run(check_shared_store, proxy.url, "p") is False
    assert anyio.run(check_shared_store, redis_url, "p") is True
