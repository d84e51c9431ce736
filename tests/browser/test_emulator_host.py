"""The host emulator as a forker uses it: the person's location sent as typed, a layout that
holds down to a phone's width, only the sign-in action that applies, each new result's widget
inline, and a tab icon (no 404)."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.host import Host, expect

pytestmark = pytest.mark.demo("cafes", "zoo")


def test_the_location_form_is_what_the_tools_read(host: Host) -> None:
    page = host.page
    page.get_by_test_id("location-city").fill("Lisbon")
    page.get_by_test_id("location-region").fill("Lisboa")
    page.get_by_test_id("location-country").fill("PT")
    page.get_by_test_id("location-timezone").fill("Europe/Lisbon")
    result = host.call("recommend_cafe", {})
    assert result["structuredContent"]["city"] == "Lisbon"
    expect(host.by_testid("cafes-heading")).to_have_text("Cafés in Lisbon")


def test_no_location_leaves_it_out(host: Host) -> None:
    host.page.get_by_test_id("no-location").check()
    host.start_call("recommend_cafe", {})
    # No city known: the tool asks for one (a form the emulator shows), where with the location
    # it answers at once (the test above).
    expect(host.page.get_by_test_id("form-box")).to_be_visible()


@pytest.mark.parametrize("width", [400, 720, 1000])
def test_the_emulator_fits_a_narrow_window(host: Host, width: int) -> None:
    host.page.set_viewport_size({"width": width, "height": 800})
    host.call("get_zoo_animals", {"count": 2})
    host.expect_state("zoo", "ready")
    overflow = host.page.evaluate(
        "() => document.scrollingElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{overflow}px cut off at {width}px"
    frame = host.page.locator("iframe[data-testid=widget-frame]").bounding_box()
    assert frame is not None and frame["x"] >= 0 and frame["x"] + frame["width"] <= width
    if width <= 720:  # one column: the widget comes first
        call_button = host.page.get_by_test_id("call").bounding_box()
        assert call_button is not None and frame["y"] < call_button["y"]


def test_only_the_sign_in_that_applies_is_offered(host: Host, fresh_account) -> None:
    expect(host.page.get_by_test_id("sign-out")).to_be_hidden()
    expect(host.page.get_by_test_id("sign-in")).to_be_visible()
    host.sign_in(*fresh_account)
    expect(host.page.get_by_test_id("sign-out")).to_be_visible()
    expect(host.page.get_by_test_id("sign-in")).to_be_hidden()


def test_a_new_result_opens_inline_after_a_full_screen_one(host: Host) -> None:
    host.call("get_zoo_animals", {"count": 2})
    host.page.evaluate("() => window.hostEmulator.setDisplayMode('fullscreen')")
    expect(host.page.locator("#frame-box")).to_have_attribute("data-display-mode", "fullscreen")
    host.call("recommend_cafe", {})
    expect(host.page.locator("#frame-box")).to_have_attribute("data-display-mode", "inline")
    assert host.state["displayMode"] == "inline"
    expect(host.page.get_by_test_id("display-mode")).to_have_value("inline")


def test_the_tab_icon_is_served(host: Host) -> None:
    href = host.page.locator("link[rel=icon]").get_attribute("href")
    assert href is not None
    icon = httpx.get(f"{host.base_url}{href}", timeout=5)
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
