"""The host emulator page (``/dev/host``) seen from a browser test: its automation API
(``window.hostEmulator``, see widgets/src/host/main.ts) and the widget frame it mounts."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

try:
    from playwright.sync_api import FrameLocator, Locator, Page, Route, expect
except ImportError as exc:  # a dev dependency; without it the browser tests cannot run
    if os.environ.get("APP_REQUIRE_BROWSER") == "1":
        raise
    pytest.skip(f"the playwright package is missing ({exc}): install the dev dependencies", allow_module_level=True)

__all__ = ["FIXTURES", "Host", "Route", "artifacts_dir", "expect"]

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"


def artifacts_dir() -> Path:
    """``APP_TEST_ARTIFACTS`` or tests/browser/artifacts/ (created)."""
    path = Path(os.environ.get("APP_TEST_ARTIFACTS") or HERE / "artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Host:
    page: Page
    base_url: str
    # The after-test check (no protocol violations); a test about violations turns it off.
    check_violations: bool = True
    page_errors: list[str] = field(default_factory=list)
    # The URL of every request a widget frame made (the after-test check holds them to the CSP).
    widget_requests: list[str] = field(default_factory=list)

    # ---- window.hostEmulator ------------------------------------------------------------------

    def open(self) -> None:
        response = self.page.goto(f"{self.base_url}/dev/host")
        assert response is not None and response.status == 200, (
            f"/dev/host answered {response and response.status}: {response and response.text()[:300]} "
            "(build it: cd widgets && node scripts/build.mjs)")
        self.wait_ready()

    def wait_ready(self) -> None:
        self.page.wait_for_function("() => window.hostEmulator !== undefined")
        self.page.evaluate("() => window.hostEmulator.ready")

    def call(self, name: str, args: dict | None = None, **opts: Any) -> dict:
        """hostEmulator.call(name, args, opts): the tool's result, once its widget is mounted."""
        return self.page.evaluate("([n, a, o]) => window.hostEmulator.call(n, a, o)", [name, args or {}, opts])

    def start_call(self, name: str, args: dict | None = None) -> None:
        """hostEmulator.call without waiting: a call that asks with a form waits for the person."""
        self.page.evaluate("([n, a]) => { window.__pending = window.hostEmulator.call(n, a); }",
                           [name, args or {}])

    def finish_call(self) -> dict:
        """The result of the call started by start_call, once it is done."""
        return self.page.evaluate("() => window.__pending")

    def remount(self) -> None:
        self.page.evaluate("() => window.hostEmulator.remount()")

    def set_theme(self, theme: str) -> None:
        self.page.evaluate("(t) => window.hostEmulator.setTheme(t)", theme)

    def set_locale(self, locale: str) -> None:
        self.page.evaluate("(l) => window.hostEmulator.setLocale(l)", locale)

    def record(self, name: str) -> Any:
        """One of the recorded arrays (violations, widgetCalls, links, messages, logs) or ``state``."""
        return self.page.evaluate("(n) => window.hostEmulator[n]", name)

    @property
    def violations(self) -> list[str]:
        return self.record("violations")

    @property
    def state(self) -> dict:
        return self.record("state")

    def wait_for_record(self, name: str, predicate_js: str, timeout: float = 5000) -> None:
        """Wait until some entry of ``hostEmulator[name]`` satisfies ``predicate_js`` (a JS arrow function)."""
        self.page.wait_for_function(f"() => window.hostEmulator[{name!r}].some({predicate_js})", timeout=timeout)

    # ---- the widget frame ---------------------------------------------------------------------

    @property
    def frame(self) -> FrameLocator:
        return self.page.frame_locator("iframe[data-testid=widget-frame]")

    def frame_object(self):
        handle = self.page.locator("iframe[data-testid=widget-frame]").element_handle()
        frame = handle.content_frame()
        assert frame is not None
        return frame

    def root(self, widget: str) -> Locator:
        return self.frame.locator(f'main[data-widget="{widget}"]')

    def by_testid(self, testid: str) -> Locator:
        return self.frame.get_by_test_id(testid)

    def expect_state(self, widget: str, state: str, timeout: float = 10_000) -> None:
        expect(self.root(widget)).to_have_attribute("data-state", state, timeout=timeout)

    def screenshot(self, widget: str) -> Path:
        path = artifacts_dir() / f"{widget}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    # ---- sign-in (the real authorization code flow) -----------------------------------------

    def sign_in(self, username: str, password: str) -> None:
        self.page.get_by_test_id("sign-in").click()
        self.page.wait_for_selector("#username")
        self.page.fill("#username", username)
        self.page.fill("#password", password)
        self.page.click("form button[type=submit]")
        self.page.click("button[name=decision][value=approve]")
        self.page.wait_for_url(f"{self.base_url}/dev/host**")
        self.wait_ready()
        expect(self.page.get_by_test_id("account")).to_contain_text("signed in")

    # ---- the server's recent log events -------------------------------------------------------

    def server_logs(self, widget_session_id: str) -> list[dict]:
        resp = httpx.get(f"{self.base_url}/dev/logs", params={"widget_session_id": widget_session_id}, timeout=5)
        resp.raise_for_status()
        return resp.json()["lines"]

    def wait_server_logs(self, widget_session_id: str, widget_events: set[str], timeout: float = 5.0) -> list[dict]:
        """The session's log lines once every one of ``widget_events`` is among its ``widget.event`` lines."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.server_logs(widget_session_id)
            seen = {line.get("widget_event") for line in lines if line.get("event") == "widget.event"}
            if widget_events <= seen or time.monotonic() > deadline:
                return lines
            time.sleep(0.2)  # polling an HTTP endpoint, not a test delay
