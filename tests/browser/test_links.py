"""Links leave the widget through the host (window.openai.openExternal), never by navigating the frame."""

from __future__ import annotations

import json

import pytest

from tests.browser.host import Host, expect

pytestmark = pytest.mark.demo("cafes", "search")


def test_search_result_link_opens_externally(host: Host) -> None:
    result = host.call("search", {"q": "asyncio gather"})
    hit = next(h for h in result["structuredContent"]["results"] if h["title"] == "asyncio.gather")
    host.expect_state("search", "ready")
    row = host.frame.locator(f'[data-testid="search-result"][data-result-id="{hit["id"]}"]')

    row.get_by_test_id("search-result-link").click()
    host.wait_for_record("links", f"(l) => l.via === 'openExternal' && l.url === {json.dumps(hit['url'])}")
    assert host.record("links") == [{"via": "openExternal", "url": hit["url"]}]
    expect(row).to_have_attribute("data-visited", "true")
    expect(host.by_testid("action-error")).to_have_count(0)


def test_cafe_map_opens_openstreetmap_externally(host: Host) -> None:
    result = host.call("recommend_cafe", {})
    cafe = result["structuredContent"]["cafes"][0]
    detail = next(d for d in result["_meta"]["cafesById"].values() if d["name"] == cafe["name"])
    expected = detail["map_url"]
    assert expected.startswith("https://www.openstreetmap.org/search?"), expected
    host.expect_state("cafes", "ready")

    card = host.frame.locator(f'[data-testid="cafe-card"][data-cafe-name="{cafe["name"]}"]')
    card.get_by_test_id("cafe-map").click()
    host.wait_for_record("links", f"(l) => l.via === 'openExternal' && l.url === {json.dumps(expected)}")
    assert host.record("links") == [{"via": "openExternal", "url": expected}]
    expect(host.by_testid("action-error")).to_have_count(0)


def test_without_window_openai_the_standard_requests_carry_links_and_follow_ups(host: Host) -> None:
    # A pure MCP Apps host (no ChatGPT extensions): the bridge falls back to ui/open-link and ui/message,
    # answered by ext-apps' own AppBridge.
    result = host.call("search", {"q": "asyncio gather"}, openai=False)
    hit = next(h for h in result["structuredContent"]["results"] if h["title"] == "asyncio.gather")
    host.expect_state("search", "ready")
    assert host.frame_object().evaluate("() => typeof window.openai") == "undefined"
    row = host.frame.locator(f'[data-testid="search-result"][data-result-id="{hit["id"]}"]')

    row.get_by_test_id("search-result-link").click()
    host.wait_for_record("links", f"(l) => l.via === 'ui/open-link' && l.url === {json.dumps(hit['url'])}")
    row.get_by_test_id("search-result-ask").click()
    host.wait_for_record("messages", "(m) => m.via === 'ui/message' && m.role === 'user' && "
                                     "m.content[0].text === 'Tell me more about asyncio.gather'")
    assert host.record("links") == [{"via": "ui/open-link", "url": hit["url"]}]
    # The visited mark is widget state: without window.openai it goes to the model as context.
    host.wait_for_record("modelContext", "(c) => c.content[0].text.includes('asyncio.gather')")
