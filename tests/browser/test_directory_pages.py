"""The privacy and terms pages in a browser, light and dark, in two of their languages: what a
reviewer from the app directory reads, audited with axe-core (tests/browser/accessibility.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.accessibility import violations
from tests.e2e.server import LiveServer


@pytest.fixture(params=["light", "dark"])
def page(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:
    context = browser.new_context(bypass_csp=True, color_scheme=request.param, locale="es-ES",
                                  viewport={"width": 390, "height": 844})  # a phone's
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.mark.parametrize(("path", "heading"), [
    ("/privacy", "Política de privacidad"), ("/terms", "Condiciones de uso"),
    ("/privacy?lang=zh", "隐私政策"), ("/terms?lang=zh", "使用条款")])
def test_the_page_reads_in_the_browsers_language_and_has_no_accessibility_violation(
        page: Any, browser_server: LiveServer, path: str, heading: str):
    answer = page.goto(browser_server.base_url + path)
    assert answer is not None and answer.status == 200
    assert page.locator("h1").inner_text() == heading
    # Nothing wider than the phone's screen: a long word or URL wraps.
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    assert violations(page) == []
