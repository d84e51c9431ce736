"""The host emulator itself is strict (so a lenient emulator cannot hide a widget that never completes
the handshake): a view that never sends ui/notifications/initialized gets no tool input or result and is
listed as a violation; a view that does the whole handshake gets them, with no violation.

The test-only views (tests/browser/fixtures/) replace the probe widget's HTML (tests/e2e/probe_feature.py, a
test-only feature) in the server's resources/read answer, intercepted in the browser: no test-only code in
the app, and no demo needed."""

from __future__ import annotations

import json

from tests.browser.host import FIXTURES, Host, Route, expect

NEVER_INITIALIZED = "view never initialized (no ui/notifications/initialized)"


def serve_view_instead_of_widgets(host: Host, html: str) -> list[str]:
    """Every resources/read answer carries ``html`` as its text; returns the URIs it replaced."""
    replaced: list[str] = []

    def handle(route: Route) -> None:
        body = route.request.post_data_json if route.request.method == "POST" else None
        if not (isinstance(body, dict) and body.get("method") == "resources/read"):
            route.continue_()
            return
        response = route.fetch()
        answer = response.json()
        for content in answer["result"]["contents"]:
            content["text"] = html
            replaced.append(content["uri"])
        route.fulfill(response=response, json=answer)

    host.page.route("**/mcp", handle)
    return replaced


def test_a_view_that_never_initializes_gets_nothing_and_is_listed(host: Host) -> None:
    host.check_violations = False  # this test is about the violation
    replaced = serve_view_instead_of_widgets(host, (FIXTURES / "never_initialized.html").read_text())

    host.call("probe_card", {})
    assert len(replaced) == 1 and replaced[0].startswith("ui://widget/probe-"), replaced
    view = host.frame.get_by_test_id("fixture")
    expect(view).to_have_attribute("data-fixture", "never-initialized")
    expect(host.by_testid("init-answer")).to_have_text("initialize answered")

    expect(host.page.get_by_test_id("violations")).to_contain_text(NEVER_INITIALIZED, timeout=6500)
    assert host.violations == [NEVER_INITIALIZED]
    assert host.state["initialized"] is False
    expect(host.by_testid("delivered")).to_have_text("nothing delivered")
    assert host.frame_object().evaluate("() => window.openai && [window.openai.toolInput, window.openai.toolOutput]") \
        == [None, None]


def test_a_view_with_the_full_handshake_gets_the_result(host: Host) -> None:
    replaced = serve_view_instead_of_widgets(host, (FIXTURES / "full_handshake.html").read_text())

    result = host.call("probe_card", {})
    assert len(replaced) == 1, replaced
    expect(host.frame.get_by_test_id("fixture")).to_have_attribute("data-fixture", "full-handshake")
    expect(host.by_testid("delivered")).to_have_text("ui/notifications/tool-input, ui/notifications/tool-result")
    assert json.loads(host.by_testid("structured").inner_text()) == result["structuredContent"]
    host.page.wait_for_function("() => window.hostEmulator.state.initialized === true")
    expect(host.page.get_by_test_id("status")).to_have_text("view initialized")
    assert host.violations == []


def test_a_view_that_leaves_the_teardown_request_unanswered_is_listed(host: Host) -> None:
    host.check_violations = False  # this test is about the violation
    answering = "if (m.method && m.id !== undefined) window.parent.postMessage"
    html = (FIXTURES / "full_handshake.html").read_text()
    assert answering in html
    serve_view_instead_of_widgets(host, html.replace(answering, "if (false) window.parent.postMessage"))

    host.call("probe_card", {})
    expect(host.by_testid("delivered")).to_have_text("ui/notifications/tool-input, ui/notifications/tool-result")
    assert host.violations == []
    host.remount()
    assert host.violations == ["ui/resource-teardown got no response"]
