"""The host emulator shows the forms a tool asks with (app/mcp/forms.py) as a person sees them,
sends the answer back with the sealed state, and mounts the widget of the final result: a recipe
saved under the title typed in the form, then deleted through the picker of the account's own
recipes; a declined form ends the call with the tool's words."""

from __future__ import annotations

import uuid

import pytest

from tests.browser.host import Host, expect

pytestmark = [pytest.mark.demo("recipes", "cafes"), pytest.mark.authserver]


def test_a_recipe_is_saved_from_the_form_and_deleted_from_the_picker(host: Host, fresh_account):
    host.sign_in(*fresh_account)
    title = f"Form tart {uuid.uuid4().hex[:6]}"
    host.start_call("save_recipe", {"source_url": "https://example.com/tart"})
    form = host.page.get_by_test_id("form")
    expect(form).to_contain_text("Which recipe should be saved?")
    expect(host.page.get_by_test_id("field-source_url")).to_have_value("https://example.com/tart")
    host.page.get_by_test_id("field-title").fill(title)
    host.page.get_by_test_id("form-submit").click()
    saved = host.finish_call()
    assert saved["structuredContent"]["recipe"]["title"] == title
    assert saved["structuredContent"]["created"] is True
    expect(host.page.get_by_test_id("form-state")).to_contain_text("sealed state (")
    expect(host.page.get_by_test_id("form-box")).to_be_hidden()
    [asked] = host.page.evaluate("() => window.hostEmulator.forms")
    assert asked["key"] == "title" and asked["stateLength"] > 40
    host.expect_state("recipes", "ready")

    host.start_call("delete_saved_recipe", {})
    picker = host.page.get_by_test_id("field-choice")
    expect(picker).to_contain_text(title)
    picker.get_by_label(title).check()
    host.page.get_by_test_id("form-submit").click()
    deleted = host.finish_call()
    assert deleted["structuredContent"] == {"deleted": True,
                                            "recipe_id": saved["structuredContent"]["recipe"]["id"]}
    assert host.page.evaluate("() => window.hostEmulator.violations") == []


def test_a_declined_form_ends_the_call_with_the_tools_words(host: Host, fresh_account):
    host.sign_in(*fresh_account)
    host.start_call("save_recipe", {})
    host.page.get_by_test_id("form-decline").click()
    declined = host.finish_call()
    assert declined["isError"] is True
    assert declined["content"][0]["text"] == "Nothing was saved: no title was given."


def test_without_a_location_the_cafe_form_suggests_the_known_cities(host: Host):
    host.page.get_by_test_id("no-location").check()
    host.start_call("recommend_cafe", {})
    city = host.page.get_by_test_id("field-city")
    expect(city).to_have_attribute("list", "suggest-city")
    suggested = host.page.locator("#suggest-city option").evaluate_all(
        "(options) => options.map((o) => o.value)")
    assert "Paris" in suggested
    city.fill("Paris")
    host.page.get_by_test_id("form-submit").click()
    found = host.finish_call()
    assert found["structuredContent"]["city"] == "Paris"
    host.expect_state("cafes", "ready")
