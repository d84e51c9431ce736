"""What the widgets show beyond the bare result: search marks why each result matched and puts a
module's own page first; a saved recipe shows its link and opens it through the host."""

from __future__ import annotations

import uuid

import pytest

from tests.browser.host import Host, expect

pytestmark = [pytest.mark.demo("search", "recipes"), pytest.mark.authserver]


def test_search_puts_the_module_first_and_marks_the_matched_words(host: Host) -> None:
    result = host.call("search", {"q": "pathlib"})
    assert result["structuredContent"]["results"][0]["id"] == "py:pathlib"
    host.expect_state("search", "ready")
    first = host.by_testid("search-result").first
    expect(first).to_have_attribute("data-result-id", "py:pathlib")
    marks = first.get_by_test_id("search-hit")
    expect(marks.first).to_have_text("pathlib")
    for snippet in host.by_testid("search-result-snippet").all_text_contents():
        assert "``" not in snippet and ":class:`" not in snippet, snippet


def test_a_saved_recipes_link_shows_and_opens_through_the_host(host: Host, fresh_account) -> None:
    host.sign_in(*fresh_account)
    title = f"Linked tart {uuid.uuid4().hex[:6]}"
    link = "https://recipes.example.org/tarts/lemon"
    host.call("save_recipe", {"title": title, "source_url": link})
    listed = host.call("list_saved_recipes", {})
    [(rid, url)] = listed["_meta"]["linksById"].items()
    assert url == link and listed["structuredContent"]["recipes"][0] == {"id": rid, "title": title}
    host.expect_state("recipes", "ready")
    shown = host.by_testid("recipe-link")
    expect(shown).to_have_text("recipes.example.org/tarts/lemon")
    shown.click()
    host.wait_for_record("links", f"(l) => l.url === {link!r}")
    [opened] = host.record("links")
    assert opened == {"via": "ui/open-link", "url": link}
