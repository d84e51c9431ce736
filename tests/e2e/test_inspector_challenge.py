"""MCP Inspector's CLI (npm @modelcontextprotocol/inspector, pinned under tools/conformance) calling an
oauth-only tool: without a token it is told, at HTTP level, where to sign in (401 with resource_metadata);
with ChatGPT's openai/* _meta, the same call gets the isError challenge ChatGPT links from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Linking
from tests.e2e.server import ROOT
from tests.e2e.test_conformance import NODE

pytestmark = [pytest.mark.authserver, pytest.mark.demo("recipes"), pytest.mark.any_database]
INSPECTOR = ROOT / "tools" / "conformance" / "node_modules" / "@modelcontextprotocol" / "inspector"
LAUNCHER = INSPECTOR / "clients" / "launcher" / "build" / "index.js"


def _inspector(*args: str, env: dict[str, str] | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    if not (NODE.exists() and LAUNCHER.exists()):
        if os.environ.get("CI"):
            pytest.fail("MCP Inspector not installed (run: cd tools/conformance && npm ci)")
        pytest.skip("MCP Inspector not installed")
    try:
        return subprocess.run([str(NODE), str(LAUNCHER), "--cli", *args], capture_output=True, text=True,
                              timeout=timeout, cwd=INSPECTOR,
                              env={**os.environ, "MCP_CATALOG_PATH": os.devnull, "NO_COLOR": "1", **(env or {})})
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(exc.cmd, -1, str(exc.stdout or ""), str(exc.stderr or ""))


def test_inspector_without_a_token_follows_the_401_to_the_metadata_links_and_calls_the_tool(linking: Linking,
                                                                                          tmp_path: Path):
    # The system browser the Inspector opens (xdg-open hands the URL to $BROWSER): a person who signs in.
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\ncd "{ROOT}" && exec "{sys.executable}" -m tests.e2e.person_at_the_browser "$1"\n')
    browser.chmod(0o755)
    done = _inspector(linking.resource, "--transport", "http", "--method", "tools/call",
                      "--tool-name", "list_saved_recipes",
                      env={"MCP_AUTO_OPEN_ENABLED": "true", "BROWSER": str(browser), "PERSON_USERNAME": "bob",
                           "PERSON_PASSWORD": "demo-password"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recipes" in json.loads(done.stdout)["structuredContent"]
    # What it did between the 401 and the call that worked: read the metadata the challenge named, registered.
    lines = [json.loads(line) for line in linking.server.log_path.read_text().splitlines() if line.startswith("{")]
    paths = [(line.get("method"), line.get("path"), line.get("status")) for line in lines
             if line.get("event") == "http.request"]
    first_401 = paths.index(("POST", "/mcp", 401))
    assert ("GET", "/.well-known/oauth-protected-resource/mcp", 200) in paths[first_401:]
    assert ("POST", "/register", 201) in paths[first_401:] and ("POST", "/token", 200) in paths[first_401:]


def test_inspector_that_may_not_open_a_browser_stops_at_the_401(linking: Linking):
    done = _inspector(linking.resource, "--transport", "http", "--method", "tools/call",
                      "--tool-name", "list_saved_recipes", "--stored-auth-only")
    assert done.returncode == 3, done.stdout + done.stderr
    [said] = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith('{"error"')]
    error = json.loads(said)["error"]
    assert error["code"] == "auth_required" and "Sign in to use List saved recipes" in error["message"]


def test_inspector_with_chatgpts_meta_gets_the_is_error_challenge(linking: Linking):
    done = _inspector(linking.resource, "--transport", "http", "--method", "tools/call",
                      "--tool-name", "list_saved_recipes", "--tool-metadata", "openai/locale=en-US")
    assert done.returncode == 5, done.stdout + done.stderr  # the Inspector's exit code for an isError result
    result = json.loads(done.stdout)
    assert result["isError"] is True
    (challenge,) = result["_meta"]["mcp/www_authenticate"]
    assert f'resource_metadata="{linking.base_url}/.well-known/oauth-protected-resource/mcp"' in challenge
