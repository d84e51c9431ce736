"""ChatGPT's native surface in the host emulator (/dev/host): a CSV chosen on the computer opens
through the files tool's file entrypoint and ends analysed in the files widget (read through the
host, put in its file store, handed to analyze_file); a quick action in the sidebar opens its
widget full screen; what the person selects in the cafés widget reaches the model as context,
shown as an attachment."""

from __future__ import annotations

import uuid

import pytest

from tests.browser.host import Host, expect

pytestmark = [pytest.mark.demo("files", "cafes", "zoo", "recipes", "search"),
              pytest.mark.authserver]


def test_a_csv_opened_from_the_computer_ends_analysed_in_the_files_widget(host: Host) -> None:
    name = f"tides-{uuid.uuid4().hex[:6]}.csv"
    host.page.evaluate("""(name) => { window.__pending = window.hostEmulator.openFile(
        new File(["day,height\\n1,2.5\\n2,3.1\\n3,2.8\\n"], name, {type: "text/csv"})); }""", name)
    opened = host.finish_call()
    assert opened["structuredContent"]["opening"]["name"] == name
    uri = opened["structuredContent"]["opening"]["resourceUri"]
    assert uri.startswith("devhost-file://")
    assert host.state["displayMode"] == "fullscreen"  # entrypoints open full screen
    expect(host.by_testid("file-name")).to_have_text(name, timeout=30_000)
    columns = host.by_testid("csv-columns").get_by_test_id("csv-column")
    assert [columns.nth(i).get_attribute("data-column") for i in range(columns.count())] == [
        "day", "height"]
    [analysed] = host.page.evaluate(
        "() => window.hostEmulator.widgetCalls.filter((c) => c.name === 'analyze_file')")
    # The relay: the bytes went through the host's file store, whose URL the server fetched.
    assert analysed["args"]["file"]["file_name"] == name
    assert analysed["args"]["file"]["download_url"].startswith(f"{host.base_url}/dev/files/")
    assert analysed["result"].get("isError") is not True


def test_a_csv_dropped_on_the_page_opens_as_a_file_entrypoint(host: Host) -> None:
    """The person's gesture itself: a file dropped on the emulator's drop zone."""
    name = f"levels-{uuid.uuid4().hex[:6]}.csv"
    host.page.evaluate("""(name) => {
        const data = new DataTransfer();
        data.items.add(new File(["site,level\\nA,7\\nB,9\\n"], name, {type: "text/csv"}));
        const zone = document.querySelector("[data-testid=drop-zone]");
        zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true,
                                                      cancelable: true}));
        zone.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true,
                                                  cancelable: true}));
    }""", name)
    expect(host.by_testid("file-name")).to_have_text(name, timeout=30_000)
    expect(host.by_testid("csv-columns").get_by_test_id("csv-column")).to_have_count(2)
    calls = host.page.evaluate("() => window.hostEmulator.widgetCalls.map((c) => c.name)")
    assert calls.count("analyze_file") == 1


def test_a_file_the_host_cannot_read_is_said_in_the_widget(host: Host) -> None:
    """The host answers resources/read for the URIs it handed out only: a URI it never gave
    (a stale entrypoint call) ends in the widget's own words, nothing analysed."""
    host.call("open_file", {"file": {"name": "gone.csv", "resourceUri": "devhost-file://x/gone"}},
              openai=True)
    host.expect_state("files", "error", timeout=10_000)
    expect(host.root("files")).to_contain_text(
        "“gone.csv” could not be read from your computer through this host")
    calls = host.page.evaluate("() => window.hostEmulator.widgetCalls.map((c) => c.name)")
    assert "analyze_file" not in calls


def test_a_quick_action_in_the_sidebar_opens_its_widget(host: Host, fresh_account) -> None:
    host.sign_in(*fresh_account)
    host.page.get_by_test_id("quick-list_files").click()
    expect(host.page.get_by_test_id("status")).to_contain_text("list_files", timeout=10_000)
    host.expect_state("files", "empty", timeout=15_000)
    assert host.state["displayMode"] == "fullscreen"
    expect(host.page.get_by_test_id("structured")).to_contain_text('"total": 0')


def test_a_cafe_selected_in_the_widget_reaches_the_model_as_an_attachment(host: Host) -> None:
    found = host.call("recommend_cafe", {"city": "Paris"})
    host.expect_state("cafes", "ready")
    first = found["structuredContent"]["cafes"][0]["name"]
    card = host.by_testid("cafe-card").first
    card.get_by_test_id("cafe-select").click()
    expect(card.get_by_test_id("cafe-select")).to_have_attribute("aria-pressed", "true")
    attachment = host.page.get_by_test_id("attachment")
    expect(attachment).to_have_count(1)
    expect(attachment).to_contain_text(first)
    [told] = host.page.evaluate("() => window.hostEmulator.attachments()")
    assert told["title"] == first
    assert told["text"].startswith(f"The user selected the café {first} (")
    assert "Paris" in told["text"]


def test_the_settings_show_as_native_controls_and_a_change_reaches_the_tools(
        host: Host, fresh_account) -> None:
    host.sign_in(*fresh_account)
    host.page.get_by_test_id("open-settings").click()
    box = host.page.get_by_test_id("settings-box")
    expect(box.locator("legend")).to_contain_text(["Cafés", "Files", "Recipes", "Search", "Zoo"])
    count = host.page.get_by_test_id("setting-zoo_count")
    expect(count).to_have_attribute("type", "number")
    expect(count).to_have_attribute("max", "20")
    expect(host.page.get_by_test_id("setting-search_mine")).to_be_checked()
    language = host.page.get_by_test_id("setting-cafe_language")
    assert language.evaluate("(s) => s.tagName") == "SELECT"
    count.fill("4")
    host.page.get_by_test_id("settings-save").click()
    expect(host.page.get_by_test_id("settings-state")).to_have_text(
        "Saved: Animals to list (zoo_count): 4.")
    zoo = host.call("get_zoo_animals", {})
    assert len(zoo["structuredContent"]["animals"]) == 4  # the account's choice, no argument
    expect(host.page.get_by_test_id("setting-tool-list_files")).to_have_text("List my files")


def test_anonymous_settings_say_to_connect_the_account(host: Host) -> None:
    host.page.get_by_test_id("open-settings").click()
    box = host.page.get_by_test_id("settings-box")
    expect(box).to_contain_text("needs your account: connect (sign in to) this app to use it.")
    expect(box).not_to_contain_text("Ask the user")  # the model's advice is not the person's


def test_the_composer_offers_the_accounts_recipe_and_reads_it(host: Host, fresh_account) -> None:
    host.sign_in(*fresh_account)
    title = f"Mentionable stew {uuid.uuid4().hex[:6]}"
    host.call("save_recipe", {"title": title})
    host.page.get_by_test_id("composer").fill(f"try @{title[:18]}")
    mention = host.page.get_by_test_id("mention").filter(has_text=title)
    expect(mention).to_have_count(1)
    assert mention.get_attribute("data-uri").startswith("app://recipes/")
    mention.click()
    expect(host.page.get_by_test_id("mention-read")).to_contain_text(f'"title": "{title}"')
