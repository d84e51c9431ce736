"""The widget log's limits and scrubbing: what a browser may send never floods or leaks into the log."""

from __future__ import annotations

import pytest

from app.limits import Caller, Check, Limits, Sharing
from app.mcp.widget_log import WidgetLogLimits, scrub, scrub_text, secret_key


def log_limits(per_address: int = 20, anonymous: int = 50) -> WidgetLogLimits:
    return WidgetLogLimits(Limits.in_process(Sharing(callers_per_address=per_address, anonymous_callers=anonymous)))


async def allowed(limits: WidgetLogLimits, events: list[tuple[Caller, str]]) -> list[bool]:
    return [await limits.allow(caller, session) for caller, session in events]


USER = Caller.of(None, "203.0.113.7", "openai-user-1")


@pytest.mark.anyio
async def test_one_widget_session_gets_30_events_a_minute():
    limits = log_limits()
    assert await allowed(limits, [(USER, "ws-1")] * 31) == [True] * 30 + [False]
    assert await limits.allow(USER, "ws-2") is True


@pytest.mark.anyio
async def test_rotating_the_session_id_does_not_escape_the_callers_budget():
    limits = log_limits()
    assert await allowed(limits, [(USER, f"ws-{i}") for i in range(65)]) == [True] * 60 + [False] * 5
    assert await limits.allow(Caller.of(None, "198.51.100.1"), "ws-new") is True


@pytest.mark.anyio
async def test_rotating_the_openai_subject_does_not_escape_the_address_budget():
    limits = log_limits(per_address=2, anonymous=3)  # an address: 120 a minute; every anonymous caller: 180
    rotated = [(Caller.of(None, "203.0.113.7", f"u{i}"), "ws") for i in range(125)]
    assert await allowed(limits, rotated) == [True] * 120 + [False] * 5
    elsewhere = [(Caller.of(None, "198.51.100.9", f"v{i}"), "ws") for i in range(65)]
    assert await allowed(limits, elsewhere) == [True] * 60 + [False] * 5  # the anonymous total caps both


@pytest.mark.anyio
async def test_a_linked_caller_is_counted_by_its_account_alone():
    limits = log_limits(per_address=1, anonymous=1)
    for i in range(60):  # anonymous callers on the same address use up the address and the anonymous total
        await limits.allow(Caller.of(None, "203.0.113.7", f"u{i}"), "ws")
    assert await limits.allow(Caller.of(None, "203.0.113.7", "another"), "ws") is False
    assert await limits.allow(Caller.of("acct_alice", "203.0.113.7"), "ws") is True


@pytest.mark.anyio
async def test_a_refused_event_leaves_no_count_behind():
    limits = log_limits(per_address=1, anonymous=1)
    await allowed(limits, [(USER, f"ws-{i}") for i in range(60)])
    assert await limits.allow(USER, "fresh") is False
    session = Check("widget_log.session", limits.per_session, f"{USER.key}|fresh", "")
    assert await limits.limits.counter.used(session.rate, session.ident) == 0


@pytest.mark.parametrize("key", ["token", "Authorization", "X-Api-Key", "apiKey", "client_secret", "accessToken",
                                 "Cookie", "password", "signature", "refresh_token"])
def test_secret_looking_keys_are_recognised_in_any_case(key):
    assert secret_key(key)


@pytest.mark.parametrize("key", ["animal_id", "event", "rows", "url", "name"])
def test_ordinary_keys_are_kept(key):
    assert not secret_key(key)


def test_scrub_redacts_secrets_and_cuts_url_queries_at_any_depth():
    data = {"animal_id": "a", "Authorization": "Bearer x",
            "nested": [{"apiKey": "k", "link": "see https://b.example/f/blob?exp=1&sig=abc now"}]}
    assert scrub(data) == {"animal_id": "a", "Authorization": "[redacted]",
                           "nested": [{"apiKey": "[redacted]", "link": "see https://b.example/f/blob?[redacted] now"}]}


def test_nesting_is_cut_at_six_levels():
    deep: dict = {}
    node = deep
    for _ in range(10):
        node["d"] = {}
        node = node["d"]
    out = scrub(deep)
    for _ in range(5):
        out = out["d"]
    assert out == {"d": "[too deep]"}


def test_a_url_without_a_query_is_left_alone():
    assert scrub_text("open https://docs.python.org/3/library/asyncio.html#gather") == \
        "open https://docs.python.org/3/library/asyncio.html#gather"



@pytest.mark.parametrize("value", [
    "Authorization failed for Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln",
    "token eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln in the state",
    "mail alice@example.com for help",
    "key sk-live-0123456789abcdefghij",
    "Basic YWxpY2U6c2VjcmV0cGFzcw==",
])
def test_a_secret_in_a_value_is_redacted_whatever_its_key(value):
    scrubbed = scrub({"note": value})["note"]
    assert "[redacted]" in scrubbed
    assert not any(part in scrubbed for part in ("eyJ", "alice@", "sk-live", "YWxpY2U"))


def test_ordinary_values_are_kept_as_they_are():
    data = {"note": "clicked card 3 of 12", "id": "acct_QUCkgKApN3rHE0_AzQ3MTQ", "city": "Paris",
            "request": "4f1c2b3a9d8e7f6a5b4c3d2e1f0a9b8c", "sha256": "ab" * 32,
            "error": "at_least_one_ingredient_required", "long": "m" * 1000}
    assert scrub(data) == data
