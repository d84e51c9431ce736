"""app.limits on this process's counter: atomic windows, all-or-nothing reservations, exact give-backs, who is
counted, and what happens when the shared counter stops answering (a fake that raises Redis's own errors; the
real Redis, cut by a TCP proxy, is tests/integration/test_limits_redis.py)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import anyio
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

import app.limits.counters as counters_module
import app.limits.limiter as limiter_module
from app.limits import Budget, Caller, Check, Limits, LimitsUnavailable, OverLimit, Sharing, address_key, parse_rate
from app.limits.checks import describe, per_seconds
from app.limits.counters import LocalCounter

pytestmark = pytest.mark.anyio
FIVE = parse_rate("5/minute")


def check(key: str = "k", rate=FIVE, name: str = "test", cost: int = 1) -> Check:
    return Check(name, rate, key, "this key", cost)


async def used(limits: Limits, c: Check) -> int:
    return await limits.counter.used(c.rate, c.ident)


async def admitted(limits: Limits, checks: list[Check], n: int) -> list[bool]:
    results = []
    for _ in range(n):
        try:
            await limits.acquire(checks)
            results.append(True)
        except OverLimit:
            results.append(False)
    return results


async def test_twenty_concurrent_hits_against_five_admit_exactly_five():
    limits = Limits.in_process()
    outcomes: list[bool] = []

    async def one() -> None:
        try:
            await limits.acquire([check()])
            outcomes.append(True)
        except OverLimit:
            outcomes.append(False)

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(one)
    assert outcomes.count(True) == 5 and outcomes.count(False) == 15
    assert await used(limits, check()) == 5  # the refused ones gave their increments back


async def test_a_refusal_says_which_limit_and_when_its_window_ends():
    limits = Limits.in_process()
    await admitted(limits, [check()], 5)
    with pytest.raises(OverLimit) as refused:
        await limits.acquire([check()])
    assert refused.value.limit == "test" and refused.value.label == "this key"
    assert refused.value.rate == "5 per minute" and refused.value.amount == 5 and refused.value.period == 60
    assert 58 <= refused.value.retry_after <= 60


async def test_several_checks_count_all_or_none():
    limits = Limits.in_process()
    narrow, wide = check("a", parse_rate("10/minute"), "narrow"), check("b", parse_rate("2/minute"), "wide")
    assert await admitted(limits, [narrow, wide], 4) == [True, True, False, False]
    assert await used(limits, narrow) == 2  # the refused reservations gave back what they had counted
    assert await used(limits, wide) == 2


async def test_a_release_gives_back_only_its_own_reservation():
    limits = Limits.in_process()
    reservations = [await limits.acquire([check()]) for _ in range(5)]
    await reservations[0].release()
    await reservations[0].release()  # twice changes nothing
    assert await admitted(limits, [check()], 3) == [True, False, False]


async def test_a_cost_counts_as_that_many_hits_and_a_cost_above_the_budget_never_fits():
    limits = Limits.in_process()
    bytes_rate = parse_rate("1000/hour")
    await limits.acquire([check(rate=bytes_rate, cost=600)])
    with pytest.raises(OverLimit):
        await limits.acquire([check(rate=bytes_rate, cost=600)])
    await limits.acquire([check(rate=bytes_rate, cost=400)])
    with pytest.raises(OverLimit):
        await limits.acquire([check("other", rate=bytes_rate, cost=1001)])


async def test_refusal_looks_without_counting():
    limits = Limits.in_process()
    assert await limits.refusal([check()]) is None
    await admitted(limits, [check()], 5)
    assert (await limits.refusal([check()])).limit == "test"
    assert await used(limits, check()) == 5


async def test_counts_start_again_when_the_window_ends(now):
    limits = Limits(LocalCounter())
    assert await admitted(limits, [check()], 6) == [True] * 5 + [False]
    now.t += 59
    assert await admitted(limits, [check()], 1) == [False]
    now.t += 2
    assert await admitted(limits, [check()], 6) == [True] * 5 + [False]


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """One fake clock for the counter and the reservations."""
    clock = SimpleNamespace(t=1_000_000.0)
    fake = SimpleNamespace(time=lambda: clock.t, monotonic=lambda: clock.t)
    for module in (counters_module, limiter_module):
        monkeypatch.setattr(module, "time", fake)
    return clock


async def test_a_release_within_its_window_gives_back(now):
    limits = Limits(LocalCounter())
    early = await limits.acquire([check()])
    await admitted(limits, [check()], 4)
    now.t += 30
    await early.release()
    assert await admitted(limits, [check()], 2) == [True, False]


async def test_a_release_after_the_window_ended_gives_nothing_to_the_next_one(now):
    limits = Limits(LocalCounter())
    late = await limits.acquire([check()])
    now.t += 61
    await admitted(limits, [check()], 5)
    now.t += 1
    await late.release()
    assert await admitted(limits, [check()], 1) == [False]


def test_addresses_are_counted_ipv4_as_is_and_ipv6_by_their_64():
    assert address_key("203.0.113.7") == "203.0.113.7"
    assert address_key("::ffff:203.0.113.7") == "203.0.113.7"
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key(None) == "unknown"


def test_a_linked_caller_is_its_account_and_an_anonymous_one_its_address_and_hint():
    sharing = Sharing(callers_per_address=20, anonymous_callers=200)
    budget = Budget("tool.search", parse_rate("60/minute"))
    linked = budget.checks(Caller.of("acct_1", "203.0.113.7", "ignored"), sharing)
    assert [(c.name, c.key, c.rate.amount) for c in linked] == [("tool.search", "acct:acct_1", 60)]
    anonymous = budget.checks(Caller.of(None, "203.0.113.7", "u1"), sharing)
    assert [(c.name, c.key, c.rate.amount) for c in anonymous] == [
        ("tool.search.address", "ip:203.0.113.7", 1200), ("tool.search", "ip:203.0.113.7|u1", 60),
        ("tool.search.anonymous", "*", 12000)]


async def test_keys_leave_the_local_counter_with_their_window_and_a_refused_caller_makes_none(now):
    counter = LocalCounter()
    limits = Limits(counter, sharing=Sharing(callers_per_address=2, anonymous_callers=1000))
    budget = Budget("tool.t", parse_rate("1/minute"))
    for i in range(50):  # a client rotating its hint: only what its address admits gets a key
        with contextlib.suppress(OverLimit):
            await limits.charge(budget, Caller.of(None, "203.0.113.7", f"hint-{i}"))
    assert len(counter) == 4  # the address, two callers, the anonymous total
    now.t += 61
    await limits.charge(budget, Caller.of(None, "198.51.100.1"))
    assert len(counter) == 3  # the first window's keys are gone


async def test_rotating_the_hint_only_opens_new_narrow_budgets_under_the_same_address():
    limits = Limits.in_process(Sharing(callers_per_address=3, anonymous_callers=100))
    budget = Budget("tool.t", parse_rate("2/minute"))
    outcomes = []
    for i in range(10):
        try:
            await limits.charge(budget, Caller.of(None, "203.0.113.7", f"hint-{i}"))
            outcomes.append(True)
        except OverLimit as over:
            outcomes.append(over.label)
    assert outcomes == [True] * 6 + ["this network address"] * 4


class Failing:
    """A shared counter whose Redis is gone: every call raises what redis-py raises then."""

    shared = True

    def __init__(self) -> None:
        self.calls = 0

    async def hit(self, *args: object) -> bool:
        self.calls += 1
        raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    release = used = resets_in = hit

    async def ping(self) -> None:
        raise RedisConnectionError("down")

    async def aclose(self) -> None:
        return None


async def test_with_the_shared_counter_down_lax_limits_count_here_and_strict_ones_refuse(json_log):
    clock = SimpleNamespace(t=0.0)
    shared = Failing()
    limits = Limits(shared, LocalCounter(), retry_interval=5.0, clock=lambda: clock.t)
    assert await admitted(limits, [check()], 6) == [True] * 5 + [False]  # counted in this process
    with pytest.raises(LimitsUnavailable):
        await limits.acquire([check("signin")], strict=True)
    assert shared.calls == 1  # tried once, then left alone until the retry interval is over
    clock.t += 6
    with pytest.raises(LimitsUnavailable):
        await limits.acquire([check("signin")], strict=True)
    assert shared.calls == 2
    outages = [e for e in json_log() if e["event"] == "limits.shared_store_unavailable"]
    assert len(outages) == 1 and outages[0]["error"] == "ConnectionError"


async def test_the_shared_counter_is_used_again_once_it_answers(json_log):
    clock = SimpleNamespace(t=0.0)
    limits = Limits(Failing(), LocalCounter(), clock=lambda: clock.t)
    await limits.acquire([check()])
    healthy = LocalCounter()
    healthy.shared = True  # type: ignore[misc]
    limits.counter = healthy
    clock.t += 6
    await limits.acquire([check()])
    assert await healthy.used(FIVE, check().ident) == 1
    assert [e["event"] for e in json_log() if e["event"].startswith("limits.shared")] == [
        "limits.shared_store_unavailable", "limits.shared_store_restored"]


async def test_an_unreachable_shared_counter_is_reported_at_start(json_log):
    limits = Limits(Failing(), LocalCounter())
    await limits.start()
    assert [e["event"] for e in json_log()] == ["limits.shared_store_unavailable"]


@pytest.mark.parametrize(("text", "described"), [
    ("5/minute", "5 per minute"), ("20 per 10 minutes", "20 per 10 minutes"), ("100/hour", "100 per hour"),
    ("3/2 days", "3 per 2 days")])
def test_a_rate_reads_as_written(text: str, described: str):
    assert describe(parse_rate(text)) == described


def test_a_rate_built_from_seconds_reads_in_hours_when_it_is_hours():
    assert describe(per_seconds(3_000_000, 3600)) == "3000000 per hour"
    assert describe(per_seconds(5, 7200)) == "5 per 2 hours"
    assert describe(per_seconds(5, 90)) == "5 per 90 seconds"


async def test_a_cancelled_acquisition_gives_back_what_it_had_counted():
    counter = LocalCounter()
    limits = Limits(counter)
    first, second = check("a"), check("b")

    class Slow(LocalCounter):
        async def hit(self, rate, key, cost):  # the second hit waits: the caller is cancelled meanwhile
            if key == second.ident:
                await anyio.sleep(10)
            return await counter.hit(rate, key, cost)

        async def release(self, rate, key, cost, since):
            await counter.release(rate, key, cost, since)

    limits.counter = Slow()
    with anyio.move_on_after(0.05):
        await limits.acquire([first, second])
    assert await counter.used(first.rate, first.ident) == 0


async def test_a_release_that_fails_on_one_check_still_gives_back_the_others():
    counter = LocalCounter()
    limits = Limits(counter)
    reservation = await limits.acquire([check("a"), check("b")])
    real_release = counter.release

    async def flaky(rate, key, cost, since):
        if key == check("a").ident:
            raise RedisConnectionError("gone")
        await real_release(rate, key, cost, since)

    counter.release = flaky  # type: ignore[method-assign]
    await reservation.release()
    assert await counter.used(FIVE, check("a").ident) == 1 and await counter.used(FIVE, check("b").ident) == 0


@pytest.mark.parametrize("text", ["5/minute;10/hour", "5", "five per minute", "0/minute", "5/fortnight", ""])
def test_a_rate_that_does_not_parse_is_refused_by_its_text(text: str):
    with pytest.raises(ValueError, match="rate|amount"):
        parse_rate(text)
