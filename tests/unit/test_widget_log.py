"""The widget log's limits and scrubbing: what a browser may send never floods or leaks into the log."""

from __future__ import annotations

import pytest

from app.mcp.widget_log import WidgetLogLimits, scrub, scrub_text, secret_key


def test_one_widget_session_gets_30_events_a_minute():
    limits = WidgetLogLimits()
    assert [limits.allow("ws-1", "openai:u1") for _ in range(31)] == [True] * 30 + [False]
    assert limits.allow("ws-2", "openai:u1") is True


def test_rotating_the_session_id_does_not_escape_the_callers_budget():
    limits = WidgetLogLimits()
    allowed = [limits.allow(f"ws-{i}", "ip:203.0.113.7") for i in range(125)]
    assert allowed == [True] * 120 + [False] * 5
    assert limits.allow("ws-new", "ip:198.51.100.1") is True


def test_the_process_budget_caps_every_caller_together():
    limits = WidgetLogLimits()
    allowed = [limits.allow(f"ws-{i}", f"openai:u{i}") for i in range(605)]
    assert allowed == [True] * 600 + [False] * 5


def test_a_refused_event_leaves_no_new_key_behind():
    limits = WidgetLogLimits()
    for i in range(600):
        limits.allow(f"ws-{i}", f"openai:u{i}")
    for i in range(50):
        assert limits.allow(f"fresh-{i}", f"openai:fresh-{i}") is False
    assert not any(k.startswith("fresh-") for k in limits.per_session._events)


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

