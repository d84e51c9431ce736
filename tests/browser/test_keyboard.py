"""Each widget used with the keyboard alone, as the host emulator frames it: Tab reaches its
controls from the host page, each with a visible focus ring; Enter or Space operates them; Tab
goes on out of the widget (no trap). And what changes is announced: the wait, then the result, in
a polite live region present from the first render; a failure as an alert."""

from __future__ import annotations

import uuid

import pytest

from tests.browser.host import Host, expect

pytestmark = [pytest.mark.demo("zoo", "cafes", "search", "recipes", "files"),
              pytest.mark.authserver]
MAX_TABS = 60  # more than any widget's controls: a loop that never gets there is a failure

# The focused element in the widget, and whether the person can see where the focus is.
FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  return {testid: el.dataset.testid ?? el.tagName.toLowerCase(),
          ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2};
}"""


def _in_widget(host: Host) -> dict | None:
    if host.page.evaluate("() => document.activeElement?.dataset?.testid") != "widget-frame":
        return None
    return host.frame_object().evaluate(FOCUSED)


def _tab_to(host: Host, testid: str) -> None:
    """Tab from where the focus is until it rests on ``testid`` in the widget; every control met
    on the way shows its focus ring."""
    met = []
    for _ in range(MAX_TABS):
        host.page.keyboard.press("Tab")
        focused = _in_widget(host)
        if focused is None:
            continue
        met.append(focused["testid"])
        assert focused["ring"], f"no visible focus on {focused['testid']}"
        if focused["testid"] == testid:
            return
    raise AssertionError(f"Tab never reached {testid}; it met {met}")


def _tab_out(host: Host) -> None:
    for _ in range(MAX_TABS):
        host.page.keyboard.press("Tab")
        if host.page.evaluate("() => document.activeElement?.dataset?.testid") != "widget-frame":
            return
    raise AssertionError("the focus never left the widget: a keyboard trap")


def _start(host: Host) -> None:
    """Where a person's Tab starts: the host's composer, just before the widget."""
    host.page.get_by_test_id("composer").focus()


def test_the_zoo_by_keyboard(host: Host) -> None:
    host.call("get_zoo_animals", {"count": 3})
    host.expect_state("zoo", "ready")
    _start(host)
    _tab_to(host, "animal-card")
    host.page.keyboard.press("Enter")
    expect(host.by_testid("animal-details")).to_be_visible()
    _tab_to(host, "back")
    host.page.keyboard.press("Enter")
    expect(host.by_testid("animal-list")).to_be_visible()
    _tab_out(host)


def test_the_cafes_by_keyboard(host: Host, tiles) -> None:
    host.call("recommend_cafe", {"city": "Paris"})
    host.expect_state("cafes", "ready")
    _start(host)
    _tab_to(host, "cafe-select")
    host.page.keyboard.press("Space")
    expect(host.by_testid("cafe-select").first).to_have_attribute("aria-pressed", "true")
    _tab_out(host)


def test_search_by_keyboard(host: Host) -> None:
    host.call("search", {"q": "pathlib"})
    host.expect_state("search", "ready")
    _start(host)
    _tab_to(host, "search-result-ask")
    host.page.keyboard.press("Enter")
    # The first result's "tell me more", sent as the person's next message.
    host.wait_for_record("messages", "(m) => m.prompt.startsWith('Tell me more about pathlib')")
    _tab_out(host)


def test_saved_recipes_by_keyboard(host: Host, fresh_account) -> None:
    host.sign_in(*fresh_account)
    host.call("save_recipe", {"title": "Lemon tart", "source_url": "https://example.org/tart"})
    host.expect_state("recipes", "ready")
    _start(host)
    _tab_to(host, "recipe-link")
    host.page.keyboard.press("Enter")
    host.wait_for_record("links", "(l) => JSON.stringify(l).includes('example.org/tart')")
    _tab_out(host)


def test_a_file_report_by_keyboard(host: Host, file_host) -> None:
    rows = "".join(f"{i},{i * 3}\n" for i in range(40))
    url = file_host.offer(("day,height\n" + rows).encode(), "text/csv", name="k.csv")
    host.call("analyze_file", {"file": {"download_url": url, "file_name": "k.csv",
                                        "file_id": f"file_{uuid.uuid4().hex}"}})
    host.expect_state("files", "ready", timeout=30_000)
    _start(host)
    _tab_to(host, "download-report")
    host.page.keyboard.press("Enter")
    # The report's download, opened through the host.
    host.wait_for_record("links", "(l) => l.url.includes('name=k-analysis.json')")
    _tab_out(host)


def test_the_wait_and_the_result_are_announced(host: Host) -> None:
    host.page.evaluate("() => { document.getElementById('delay-result').value = '1500'; }")
    host.start_call("get_zoo_animals", {"count": 2})
    announce = host.by_testid("announce")
    expect(announce).to_have_attribute("data-announced", "loading")
    expect(announce).to_have_attribute("role", "status")
    expect(announce).not_to_be_empty()
    host.finish_call()
    expect(announce).to_have_attribute("data-announced", "ready")
    expect(announce).to_have_text("Zoo animals")


def test_a_failure_is_an_alert(host: Host, file_host) -> None:
    host.call("analyze_file", {"file": {"download_url": f"{file_host.origin}/gone",
                                        "file_name": "gone.csv", "file_id": "file_gone"}})
    expect(host.by_testid("error")).to_have_attribute("role", "alert")
