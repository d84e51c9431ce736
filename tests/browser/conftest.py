"""Browser tests: headless Chromium (Debian's /usr/bin/chromium, never Playwright's own download)
drives the host emulator page /dev/host of a real server (``python -m app serve`` in a subprocess,
on the migrated and seeded test database of tests/conftest.py).

Every test gets a fresh browser context (no cookies, no sign-in) and page on /dev/host, and fails
afterwards when the emulator listed a protocol violation (unless the test is about violations).
Without /usr/bin/chromium the tests are skipped, or fail when ``APP_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from app.db import Database
from app.settings import load_part
from tests.browser.tiles import TileServer, serving_tiles
from tests.e2e.server import LiveServer, free_port
from tests.filehost import FileServer, serving_files

if TYPE_CHECKING:
    from tests.browser.host import Host

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
            # The widgets and the host emulator under test never see which database the server runs on.
            item.add_marker(pytest.mark.any_database)


def _unavailable(reason: str) -> None:
    if os.environ.get("APP_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (APP_REQUIRE_BROWSER=1)", pytrace=False)
    pytest.skip(reason)


# Package scope, not session: the sync Playwright API runs an asyncio loop in this thread while it
# is open, and every anyio test collected after these ones would fail ("another loop is running").
@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing: install Debian's chromium package to run the browser tests")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        _unavailable(f"the playwright package is missing ({exc}): install the dev dependencies")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def file_host() -> Iterator[FileServer]:
    """A loopback file server (tests/filehost.py) the server may fetch from: it plays ChatGPT's file host."""
    with serving_files() as server:
        yield server


@pytest.fixture(scope="session")
def tile_host() -> Iterator[TileServer]:
    """A loopback map tile server (tests/browser/tiles.py): the cafés' map draws from it."""
    with serving_tiles() as server:
        yield server


@pytest.fixture
def tiles(tile_host: TileServer) -> Iterator[TileServer]:
    """The tile server, its list of requests this test's alone, answering again after a test that
    made it fail."""
    tile_host.paths.clear()
    yield tile_host
    tile_host.failing = False


@pytest.fixture(scope="package")
def browser_server(browser: object, database_url: str, file_host: FileServer, tile_host: TileServer,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    port = free_port()
    # The cafés' map tiles come from loopback (the widget's CSP declares that origin); a fork
    # without the cafés is not told of a setting it does not read.
    tiles = {"APP_CAFES_MAP_TILES": tile_host.template} if find_spec("app.features.cafes") else {}
    # The probe server: the discovered features (the demos' widgets) plus a test-only widget, so a core test
    # (the emulator's own strictness) needs no demo.
    server = LiveServer(database_url, tmp_path_factory.mktemp("browser-logs") / "server.log", port=port,
                        module="tests.e2e.probe_server", extra_env={
        # analyze_file may fetch from the loopback file host (as the e2e/integration tests allow theirs)
        # and from the host emulator's file library, which this server keeps at /dev/files.
        "APP_OUTBOUND_ALLOWLIST": f"{file_host.origin.removeprefix('http://')},127.0.0.1:{port}",
        # Every test signs in with a fresh browser context, so registers a new client.
        "APP_LIMIT_REGISTRATIONS_PER_ADDRESS": "1000/hour",
        "APP_LIMIT_REGISTRATIONS_PER_NETWORK": "1000/hour",
        **tiles,
    }).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def demo_password(database_url: str) -> str:
    """The demo accounts' password (alice, bob), as the seed step that created them read it."""
    from app.authserver.settings import AuthServerSettings  # here: a fork without it keeps this conftest

    return load_part(AuthServerSettings).demo_password


@pytest.fixture
def fresh_account(database_url: str) -> tuple[str, str]:
    """(username, password) of an account created for this test: it owns nothing, whatever other
    tests on the same worker saved before it."""
    from app.authserver.accounts import create_account  # here: a fork without it keeps this conftest

    username, password = f"browser-{uuid.uuid4().hex[:10]}", f"pw-{uuid.uuid4().hex}"
    db = Database(database_url)
    try:
        db.write_sync(lambda uow: create_account(uow, username, password, display_name="Browser Tester"))
    finally:
        db.dispose()
    return username, password


@pytest.fixture
def host(browser, browser_server: LiveServer) -> Iterator[Host]:
    from tests.browser.host import Host  # imports playwright: only once a browser is there

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    h = Host(page, browser_server.base_url)
    page.on("pageerror", lambda err: h.page_errors.append(str(err)))
    # Every request a widget frame makes (the host page's own go to this server): its origin must
    # be one the widgets' CSP metadata declares. `check` proves it of the HTML; this, at run time.
    page.on("request", lambda request: h.widget_requests.append(request.url)
            if request.frame != page.main_frame else None)
    try:
        h.open()
        yield h
        declared = widget_origins(browser_server)
        undeclared = undeclared_requests(h.widget_requests, declared)
        assert undeclared == [], (f"a widget requested an origin its CSP does not declare: "
                                  f"{undeclared[:5]} (declared: {sorted(declared)})")
        if h.check_violations:
            assert h.violations == [], f"the host emulator listed protocol violations: {h.violations}"
        # An exception is a bug even when the page looks right: in the host page (pageerror), or in a
        # widget frame, which the bridge reports as widget.error (the emulator keeps every one).
        assert h.page_errors == [], f"uncaught errors in the host page: {h.page_errors}"
        widget_errors = h.page.evaluate("() => window.hostEmulator.state.widgetErrors")
        assert widget_errors == [], f"a widget reported errors: {widget_errors}"
    finally:
        context.close()


def undeclared_requests(urls: list[str], declared: frozenset[str]) -> list[str]:
    """The http(s) requests whose origin no widget declares (data: and blob: stay in the frame)."""
    return [url for url in urls
            if url.startswith(("http:", "https:")) and origin_of(url) not in declared]


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


_ORIGINS: dict[str, frozenset[str]] = {}


def widget_origins(server: LiveServer) -> frozenset[str]:
    """Every origin a widget of ``server`` declares (``ui.csp`` connect, resource and frame
    domains), read once over MCP as a host reads them."""
    if server.base_url not in _ORIGINS:
        declared: set[str] = set()
        for resource in server.rpc("resources/list")["result"]["resources"]:
            if not resource["uri"].startswith("ui://"):
                continue
            [content] = server.rpc("resources/read", {"uri": resource["uri"]})["result"]["contents"]
            csp = (content.get("_meta") or {}).get("ui", {}).get("csp", {})
            for key in ("connectDomains", "resourceDomains", "frameDomains"):
                declared.update(csp.get(key) or ())
        _ORIGINS[server.base_url] = frozenset(declared)
    return _ORIGINS[server.base_url]
