"""The pages a person reads outside ChatGPT's frame, audited with axe-core (tests/browser/
accessibility.py) light and dark: the sign-in and consent pages of the authorization code flow,
/account signed out and signed in, the error page, and the host emulator a forker works in. No
violation of WCAG 2.1 A or AA, of any impact."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.accessibility import violations
from tests.e2e.server import LiveServer

pytestmark = pytest.mark.authserver


@pytest.fixture(params=["light", "dark"])
def page(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:
    context = browser.new_context(bypass_csp=True, color_scheme=request.param,
                                  viewport={"width": 1280, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()


def _submit(page: Any, password: str, then: str) -> None:
    """Signs alice in on the sign-in form on ``page`` and waits for ``then`` on the next page."""
    page.fill("#username", "alice")
    page.fill("#password", password)
    page.click("form button[type=submit]")
    page.wait_for_selector(then)


def test_the_sign_in_and_consent_pages_have_no_accessibility_violation(
        page: Any, browser_server: LiveServer, demo_password: str):
    from tests.browser.host import Host  # imports playwright: only once a browser is there

    host = Host(page, browser_server.base_url)
    host.open()
    page.get_by_test_id("sign-in").click()
    page.wait_for_selector("#username")
    found = {"sign-in": violations(page)}
    _submit(page, demo_password, then="button[name=decision][value=approve]")
    found["consent"] = violations(page)
    assert found == {"sign-in": [], "consent": []}


def test_the_account_page_signed_out_and_in_has_no_accessibility_violation(
        page: Any, browser_server: LiveServer, demo_password: str):
    answer = page.goto(f"{browser_server.base_url}/account")
    assert answer is not None and answer.status == 200
    page.wait_for_selector("#password")
    found = {"signed out": violations(page)}
    _submit(page, demo_password, then="form[action$='/account/sign-out']")
    found["signed in"] = violations(page)
    assert found == {"signed out": [], "signed in": []}


def test_the_error_page_and_the_host_emulator_have_no_accessibility_violation(
        page: Any, browser_server: LiveServer):
    from tests.browser.host import Host  # imports playwright: only once a browser is there

    answer = page.goto(f"{browser_server.base_url}/authorize?response_type=code"
                       "&client_id=dcr_nobody&redirect_uri=https://c.example/cb")
    assert answer is not None and answer.status == 400
    found = {"error": violations(page)}
    Host(page, browser_server.base_url).open()
    found["host emulator"] = violations(page)
    assert found == {"error": [], "host emulator": []}


def test_the_harness_reports_what_a_person_with_a_screen_reader_would_miss(page: Any):
    # A field without a label, and grey on white text no one reads: axe says so.
    page.set_content('<html lang="en"><head><title>t</title></head><body><main><input id="x">'
                     '<p style="color:#ccc;background:#fff">faint</p></main></body></html>')
    found = violations(page)
    assert [line.split(" ")[0] for line in found] == ["color-contrast", "label"], found
