"""The zoo widget's app-only tool and navigation, widget state across a re-mount, and the
widget log tool's lines followed by widget session id."""

from __future__ import annotations

import json

import pytest

from tests.browser.host import Host, expect

pytestmark = pytest.mark.demo("cafes", "zoo")


def open_animal(host: Host, index: int) -> dict:
    """Mount the zoo widget and click the card at ``index``; returns that animal (structuredContent)."""
    result = host.call("get_zoo_animals", {"count": 4})
    animal = result["structuredContent"]["animals"][index]
    host.expect_state("zoo", "ready")
    host.frame.locator(f'[data-testid="animal-card"][data-animal-id="{animal["id"]}"]').click()
    expect(host.by_testid("animal-details")).to_have_attribute("data-animal-id", animal["id"])
    expect(host.by_testid("animal-name")).to_have_text(animal["name"])
    return animal


def test_zoo_card_calls_the_app_only_tool_and_history_back_returns(host: Host) -> None:
    animal = open_animal(host, 1)
    host.wait_for_record(
        "widgetCalls",
        f"(c) => c.name === 'get_zoo_animal_details' && c.args.animal_id === {json.dumps(animal['id'])} "
        "&& c.result && !c.result.isError")
    expect(host.by_testid("animal-list")).to_have_count(0)

    host.frame_object().evaluate("() => history.back()")
    expect(host.by_testid("animal-list")).to_be_visible()
    expect(host.by_testid("animal-details")).to_have_count(0)
    expect(host.by_testid("animal-card")).to_have_count(4)


def test_zoo_back_button_returns_to_the_cards(host: Host) -> None:
    open_animal(host, 2)
    host.by_testid("back").click()
    expect(host.by_testid("animal-list")).to_be_visible()
    expect(host.by_testid("animal-card")).to_have_count(4)


def test_zoo_like_survives_a_remount(host: Host) -> None:
    animal = open_animal(host, 0)
    host.by_testid("like").click()
    expect(host.by_testid("like")).to_have_text("♥ Liked")
    host.wait_for_record(
        "widgetCalls", f"(c) => c.name === 'like_zoo_animal' && c.args.animal_id === {json.dumps(animal['id'])}")
    sid = host.state["widgetSessionId"]
    host.page.wait_for_function(
        "([sid, id]) => (window.hostEmulator.state.widgetStates[sid]?.privateContent?.liked ?? []).includes(id)",
        arg=[sid, animal["id"]])

    host.remount()
    host.expect_state("zoo", "ready")
    liked = host.frame.locator(f'[data-testid="animal-card"][data-animal-id="{animal["id"]}"] h2')
    expect(liked).to_have_text(f"{animal['name']} ♥")
    expect(host.by_testid("animal-card").locator("h2").filter(has_text="♥")).to_have_count(1)


def test_cafe_favourite_survives_a_remount(host: Host) -> None:
    result = host.call("recommend_cafe", {})
    name = result["structuredContent"]["cafes"][1]["name"]
    host.expect_state("cafes", "ready")
    card = host.by_testid("cafe-card").filter(has=host.frame.get_by_test_id("cafe-name").get_by_text(name, exact=True))
    expect(card).to_have_attribute("data-favourite", "false")
    card.get_by_test_id("cafe-favourite").click()
    expect(card).to_have_attribute("data-favourite", "true")
    sid = host.state["widgetSessionId"]
    host.page.wait_for_function(
        "([sid, name]) => (window.hostEmulator.state.widgetStates[sid]?.modelContent?.favourites ?? []).includes(name)",
        arg=[sid, name])

    host.remount()
    host.expect_state("cafes", "ready")
    card = host.by_testid("cafe-card").filter(has=host.frame.get_by_test_id("cafe-name").get_by_text(name, exact=True))
    expect(card).to_have_attribute("data-favourite", "true")
    expect(card.get_by_test_id("cafe-favourite")).to_have_attribute("aria-pressed", "true")
    expect(host.frame.locator('[data-testid="cafe-card"][data-favourite="true"]')).to_have_count(1)


def test_widget_log_lines_carry_the_widget_session_id(host: Host) -> None:
    animal = open_animal(host, 0)
    sid = host.state["widgetSessionId"]
    assert sid.startswith("ws-")

    lines = host.wait_server_logs(sid, {"widget.mount", "zoo.open"})
    events = [line for line in lines if line.get("event") == "widget.event"]
    assert {line["widget_event"] for line in events} >= {"widget.mount", "zoo.open"}, lines
    # From the first tool call on: the model's call, then the widget's own events.
    assert (lines[0]["event"], lines[0]["tool"]) == ("mcp.tool_call", "get_zoo_animals")
    zoo_open = next(line for line in events if line["widget_event"] == "zoo.open")
    assert zoo_open["widget"] == "zoo"
    assert zoo_open["data"] == {"animal_id": animal["id"]}

    panel = host.page.get_by_test_id("logs")
    expect(panel).to_contain_text("widget.event log_widget_event widget.mount", timeout=5000)
    expect(panel).to_contain_text("widget.event log_widget_event zoo.open", timeout=5000)

    # ... to the unmount: the host's teardown request makes the widget say goodbye.
    host.remount()
    assert "widget.unmount" in {line.get("widget_event") for line in host.wait_server_logs(sid, {"widget.unmount"})}


def test_zoo_full_screen_button_asks_the_host_and_follows_the_granted_mode(host: Host) -> None:
    host.call("get_zoo_animals", {"count": 2})
    host.expect_state("zoo", "ready")
    host.by_testid("fullscreen").click()
    host.page.wait_for_function("() => window.hostEmulator.state.displayMode === 'fullscreen'")
    expect(host.frame.locator("html")).to_have_attribute("data-display-mode", "fullscreen")
    expect(host.by_testid("fullscreen")).to_have_text("Exit full screen")
    host.by_testid("fullscreen").click()
    host.page.wait_for_function("() => window.hostEmulator.state.displayMode === 'inline'")
    expect(host.frame.locator("html")).to_have_attribute("data-display-mode", "inline")
