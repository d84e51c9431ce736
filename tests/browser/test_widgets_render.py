"""Each widget renders from a real tool result of the live server, mounted by the host emulator."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from tests.browser.host import Host, expect
from tests.demos import DEMOS
from tests.filehost import FileServer

pytestmark = [pytest.mark.demo(*DEMOS), pytest.mark.authserver]


def test_search_renders_the_result_rows(host: Host) -> None:
    result = host.call("search", {"q": "asyncio gather"})
    hits = result["structuredContent"]["results"]

    host.expect_state("search", "ready")
    rows = host.by_testid("search-result")
    expect(rows).to_have_count(len(hits))
    gather = rows.filter(has=host.frame.get_by_test_id("search-result-link").get_by_text("asyncio.gather", exact=True))
    expect(gather).to_have_count(1)
    expect(gather).to_have_attribute("data-result-id", "py:asyncio.gather")
    expect(host.by_testid("search-query")).to_have_attribute("data-query", "asyncio gather")
    host.screenshot("search")


def test_zoo_renders_one_card_per_animal(host: Host) -> None:
    result = host.call("get_zoo_animals", {"count": 4})
    animals = result["structuredContent"]["animals"]
    assert len(animals) == 4
    # What the emulator shows as structuredContent is what the widget was handed.
    assert json.loads(host.page.get_by_test_id("structured").inner_text()) == result["structuredContent"]

    host.expect_state("zoo", "ready")
    cards = host.by_testid("animal-card")
    expect(cards).to_have_count(4)
    expect(cards.locator("h2")).to_have_text([a["name"] for a in animals])
    assert [cards.nth(i).get_attribute("data-animal-id") for i in range(4)] == [a["id"] for a in animals]
    host.screenshot("zoo")


def test_cafes_renders_the_recommended_cafes(host: Host) -> None:
    result = host.call("recommend_cafe", {})
    structured = result["structuredContent"]
    assert structured["cafes"], "the seed has cafés"

    host.expect_state("cafes", "ready")
    expect(host.by_testid("cafes-heading")).to_have_text(f"Cafés in {structured['city']}")
    expect(host.by_testid("cafes-heading")).to_have_attribute("data-city", structured["city"])
    cards = host.by_testid("cafe-card")
    expect(cards.get_by_test_id("cafe-name")).to_have_text([c["name"] for c in structured["cafes"]])
    expect(cards.get_by_test_id("cafe-address")).to_have_text([c["address"] for c in structured["cafes"]])
    host.screenshot("cafes")


def test_recipes_signed_in_save_and_delete(host: Host, demo_password: str) -> None:
    host.sign_in("alice", demo_password)
    expect(host.page.get_by_test_id("account")).to_have_text("signed in: Alice Liddell")

    result = host.call("list_saved_recipes", {})
    assert result.get("isError") is not True, result
    before = result["structuredContent"]["recipes"]
    initial = "ready" if before else "empty"
    host.expect_state("recipes", initial)

    title = f"Browser test soup {uuid.uuid4().hex[:6]}"
    host.by_testid("title-input").fill(title)
    host.by_testid("save").click()
    row = host.by_testid("recipe-list").get_by_test_id("recipe").filter(
        has=host.frame.get_by_test_id("recipe-title").get_by_text(title, exact=True))
    expect(row).to_have_count(1)
    host.expect_state("recipes", "ready")
    expect(host.by_testid("recipe-title")).to_have_count(len(before) + 1)
    host.wait_for_record("widgetCalls", "(c) => c.name === 'save_recipe' && c.result && !c.result.isError")
    host.screenshot("recipes")

    # Re-mounted (the same message shown again): the host's result predates the save, the list does not.
    host.remount()
    expect(row).to_have_count(1)
    host.expect_state("recipes", "ready")

    recipe_id = row.get_attribute("data-recipe-id")
    row.get_by_test_id("delete").click()
    row.get_by_test_id("confirm-yes").click()
    expect(host.frame.locator(f'[data-testid="recipe"][data-recipe-id="{recipe_id}"]')).to_have_count(0)
    expect(host.by_testid("notice")).to_contain_text(title)
    host.expect_state("recipes", initial)
    host.wait_for_record(
        "widgetCalls", f"(c) => c.name === 'delete_saved_recipe' && c.args.recipe_id === {json.dumps(recipe_id)}")


def test_recipes_anonymous_is_signed_out(host: Host) -> None:
    host.call("list_saved_recipes", {})
    host.expect_state("recipes", "signed-out")
    expect(host.by_testid("signed-out")).to_be_visible()


def test_files_library_of_a_fresh_account_is_empty(host: Host, fresh_account: tuple[str, str]) -> None:
    host.sign_in(*fresh_account)
    result = host.call("list_files", {})
    assert result["structuredContent"]["total"] == 0, result
    host.expect_state("files", "empty")
    expect(host.by_testid("empty")).to_be_visible()


def test_files_analyses_a_csv_from_the_file_host(host: Host, file_host: FileServer) -> None:
    csv = (b"name,species,age,weight_kg\n"
           b"Admiral,King penguin,7,13.5\nBanjo,Red kangaroo,4,66.0\nCoco,Coconut crab,31,4.1\n")
    url = file_host.offer(csv, "text/csv", name=f"animals-{uuid.uuid4().hex[:6]}.csv")
    file_arg = {"download_url": url, "file_id": f"file_{uuid.uuid4().hex}", "file_name": "animals.csv",
                "mime_type": "text/csv"}

    result = host.call("analyze_file", {"file": file_arg})
    assert result.get("isError") is not True, result

    host.expect_state("files", "ready", timeout=30_000)
    report = host.by_testid("report")
    expect(report).to_have_attribute("data-kind", "csv")
    expect(host.by_testid("file-name")).to_have_text("animals.csv")
    columns = host.by_testid("csv-columns").get_by_test_id("csv-column")
    expect(columns).to_have_count(4)
    assert [columns.nth(i).get_attribute("data-column") for i in range(4)] == ["name", "species", "age", "weight_kg"]
    host.screenshot("files")


def test_the_host_shows_how_far_a_long_file_analysis_has_got(
    host: Host, file_host: FileServer
) -> None:
    """The emulator asks for progress (a progressToken) and shows each notification in its status
    line, as
    ChatGPT shows a long call's; the file arrives over 2.5 s."""
    body = b"name,legs\n" + b"".join(b"animal %d,%d\n" % (i, i % 9) for i in range(150_000))
    url = file_host.offer(
        body, "text/csv", name=f"big-{uuid.uuid4().hex[:6]}.csv", rate=len(body) * 2 // 5
    )
    args = {
        "file": {"download_url": url, "file_id": f"file_{uuid.uuid4().hex}", "file_name": "big.csv"}
    }
    host.page.evaluate(
        "(a) => { window.longCall = window.hostEmulator.call('analyze_file', a); }", args
    )
    expect(host.page.get_by_test_id("status")).to_have_text(
        re.compile(r"^analyze_file: Downloading the file: \d+\.\d MB of 2\.\d MB \(\d{1,2}%\)$"),
        timeout=10_000,
    )
    result = host.page.evaluate("() => window.longCall")
    assert result.get("isError") is not True, result
    progress = host.record("progress")
    assert progress[-1]["progress"] == progress[-1]["total"] == 2 * len(body)
    assert progress[-1]["message"].startswith("Analysing the file")
    host.expect_state("files", "ready", timeout=30_000)


def test_files_analyses_another_file_the_user_picks_from_the_hosts_library(host: Host, file_host: FileServer) -> None:
    first = file_host.offer(b"a,b\n1,2\n", "text/csv", name=f"first-{uuid.uuid4().hex[:6]}.csv")
    host.call("analyze_file", {"file": {"download_url": first, "file_id": f"file_{uuid.uuid4().hex}",
                                        "file_name": "first.csv"}})
    host.expect_state("files", "ready", timeout=30_000)
    # The user's library (ChatGPT's file storage; here the emulator's, kept by the server's /dev/files).
    host.page.evaluate("""() => window.hostEmulator.addToLibrary(
        new File(["city,cafes\\nParis,4\\nLyon,2\\nNice,1\\n"], "cities.csv", {type: "text/csv"}))""")
    host.by_testid("analyze-another").click()
    expect(host.by_testid("file-name")).to_have_text("cities.csv", timeout=30_000)
    columns = host.by_testid("csv-columns").get_by_test_id("csv-column")
    assert [columns.nth(i).get_attribute("data-column") for i in range(columns.count())] == ["city", "cafes"]
    calls = host.page.evaluate("() => window.hostEmulator.widgetCalls.filter((c) => c.name === 'analyze_file')")
    (call,) = calls
    assert call["args"]["file"]["file_name"] == "cities.csv"
    assert call["args"]["file"]["download_url"].startswith(f"{host.base_url}/dev/files/devfile_")
    assert call["result"].get("isError") is not True


def test_late_tool_result_renders_after_loading(host: Host) -> None:
    result = host.call("get_zoo_animals", {"count": 3}, delayResultMs=1500)
    host.expect_state("zoo", "loading", timeout=1000)
    expect(host.by_testid("loading")).to_be_visible()
    host.expect_state("zoo", "ready", timeout=5000)
    expect(host.by_testid("animal-card").locator("h2")).to_have_text(
        [a["name"] for a in result["structuredContent"]["animals"]])


def test_late_tool_input_fills_in_after_the_results(host: Host) -> None:
    # An approval flow: the host hands over the arguments only once the user approved the call.
    host.call("search", {"q": "asyncio gather"}, delayInputMs=1500)
    host.expect_state("search", "ready")
    expect(host.by_testid("search-query")).to_have_attribute("data-query", "")
    expect(host.by_testid("search-query")).to_have_attribute("data-query", "asyncio gather", timeout=5000)
