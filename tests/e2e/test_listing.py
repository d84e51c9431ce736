"""``python -m app listing`` against a running server (``python -m app serve``), over HTTP: the
shipped listing is valid, its plugin is written, and every test case is replayed as a real tool
call (the linked ones after signing in as the demo account through the sign-in and consent
pages) and answers as it expects. A broken listing fails in one line naming the case, before
anything is replayed; a case the server answers otherwise fails the replay.

The server fetches the files of the file cases from itself (/files/samples/): its own loopback
address is in its outbound allowlist, as a development server's would have to be."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import httpx
import pytest

from app.authserver.commands import review_sign_in
from app.listing.command import run
from app.listing.entries import load
from app.main import discover_features
from app.settings import load_settings
from tests.conftest import empty_database, prepare
from tests.demos import DEMOS
from tests.e2e.server import ROOT, LiveServer, free_port

pytestmark = [pytest.mark.demo(*DEMOS), pytest.mark.authserver]
FEATURES = ROOT / "app" / "features"


@pytest.fixture(scope="module")
def listing_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database of its own (on each of CI's backends): the replay likes an animal, saves and
    deletes a recipe."""
    url, drop = empty_database(tmp_path_factory.mktemp("listing-db"), "listing")
    prepare(url)
    yield url
    drop()


@pytest.fixture(scope="module")
def server(listing_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    port = free_port()
    live = LiveServer(listing_database, tmp_path_factory.mktemp("listing") / "server.log",
                      port=port, extra_env={"APP_OUTBOUND_ALLOWLIST": f"127.0.0.1:{port}"}).start()
    try:
        yield live
    finally:
        live.stop()


def test_the_shipped_listing_replays_green_against_the_running_server(server: LiveServer,
                                                                      tmp_path: Path):
    cases = load(FEATURES).cases
    proc = subprocess.run([sys.executable, "-m", "app", "listing", "--url", server.mcp_url,
                           "--plugin", str(tmp_path / "plugin")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert f"{len(cases)} of {len(cases)} test cases answered as expected" in lines
    # Each case reported: file and case, then what was asked and what came back.
    reported = [line for line in lines if line.startswith(("  ok  ", "  FAIL"))]
    assert [line.split(": ")[0].split(maxsplit=1)[1] for line in reported] == [
        c.where.split(": ")[0] for c in cases]
    assert all(line.startswith("  ok  ") for line in reported)
    assert "        answered: Linked account: Alice Liddell <alice@example.com>" in lines
    # What only the deployment knows is asked of it: its domain token is not set.
    assert (f"before you submit: domain verification: {server.base_url}/.well-known/"
            "openai-apps-challenge answers HTTP 404: set APP_OPENAI_APPS_CHALLENGE there to the "
            "token OpenAI gives you") in lines
    manifest = json.loads((tmp_path / "plugin" / ".codex-plugin" / "plugin.json").read_text())
    assert manifest["interface"]["privacyPolicyURL"] == f"{server.base_url}/privacy"
    assert json.loads((tmp_path / "plugin" / ".mcp.json").read_text())["mcpServers"] == {
        "chatgpt-app-server": {"type": "http", "url": server.mcp_url}}


def _listing_copy(tmp_path: Path) -> Path:
    """The shipped feature listings, in a folder a test may change."""
    root = tmp_path / "features"
    for listing in FEATURES.glob("*/listing.toml"):
        (root / listing.parent.name).mkdir(parents=True)
        shutil.copyfile(listing, root / listing.parent.name / "listing.toml")
    return root


def _run(server: LiveServer, root: Path) -> tuple[int, list[str]]:
    settings = load_settings(base_url=server.base_url)
    out = io.StringIO()
    with httpx.Client(timeout=60) as http, redirect_stdout(out):
        code = run(settings, http, server.mcp_url, server.base_url, root,
                   {f.name: f.instructions for f in discover_features()},
                   published=server.base_url, plugin_dir=None,
                   sign_in=review_sign_in(settings, None), account_page=None)
    return code, out.getvalue().splitlines()


def test_a_wrong_argument_fails_in_one_line_naming_the_case_before_any_replay(
        server: LiveServer, tmp_path: Path):
    root = _listing_copy(tmp_path)
    zoo = root / "zoo" / "listing.toml"
    zoo.write_text(zoo.read_text().replace("arguments = { count = 3 }",
                                           "arguments = { count = 30 }"))
    code, lines = _run(server, root)
    assert code == 1
    assert lines[1:] == [f"{zoo}, case 1: get_zoo_animals: argument count: 30 is greater than the "
                         "maximum of 20", "listing: 1 problem: nothing was replayed"]


def test_a_tool_without_a_test_case_fails(server: LiveServer, tmp_path: Path):
    root = _listing_copy(tmp_path)
    (root / "search" / "listing.toml").unlink()
    code, lines = _run(server, root)
    assert code == 1
    assert lines[1:] == ["tool search: no test case: add one to the listing.toml of the feature "
                         "that declares it", "listing: 1 problem: nothing was replayed"]


def test_an_answer_other_than_the_case_expects_fails_the_replay(server: LiveServer,
                                                               tmp_path: Path):
    root = _listing_copy(tmp_path)
    zoo = root / "zoo" / "listing.toml"
    zoo.write_text(zoo.read_text().replace("count = { animals = 3 }", "count = { animals = 4 }"))
    code, lines = _run(server, root)
    assert code == 1
    failed = [n for n, line in enumerate(lines) if line.startswith("  FAIL")]
    assert [lines[n].split(" (")[0] for n in failed] == [
        f"  FAIL  {zoo}, case 1: get_zoo_animals {{\"count\": 3}}"]
    assert lines[failed[0] + 2] == "        wrong: expected 4 items at animals, got 3"
    total = len(load(root).cases)
    assert f"{total - 1} of {total} test cases answered as expected" in lines


def test_without_a_url_it_serves_this_checkout_itself_behind_its_allowed_hosts(tmp_path: Path):
    """The command migrates, seeds and serves the app on a free loopback port; a deployment's
    APP_ALLOWED_HOSTS (DNS-rebinding protection) lets the replay's own address through too."""
    cases = load(FEATURES).cases
    env = {**os.environ, "APP_DATABASE_URL": f"sqlite:///{tmp_path / 'self.db'}",
           "APP_ALLOWED_HOSTS": "mcp.example.com", "APP_VAR_DIR": str(tmp_path / "var"),
           "APP_STORAGE_DIR": str(tmp_path / "files"), "APP_FILES_DIR": str(tmp_path / "files")}
    proc = subprocess.run([sys.executable, "-m", "app", "listing"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(cases)} of {len(cases)} test cases answered as expected" in (
        proc.stdout.splitlines())
