"""The MCP conformance suite's generic server scenarios, against the running server.

The suite needs Node >= 22; ``./dev test`` installs it (and a Node 22 binary)
from npm under tools/conformance. Off CI a missing install skips; on CI it fails.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess

import pytest

from tests.e2e.server import ROOT, LiveServer

TOOLS = ROOT / "tools" / "conformance" / "node_modules"
ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower(), "x64")
NODE = TOOLS / f"node-linux-{ARCH}" / "bin" / "node"
SUITE = TOOLS / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
# The scenarios speak the protocol; the database behind the server is never in question.
pytestmark = pytest.mark.any_database
SCENARIOS = ["server-initialize", "ping", "tools-list", "resources-list", "dns-rebinding-protection"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_generic_scenario_passes(live_server: LiveServer, scenario: str):
    if not (NODE.exists() and SUITE.exists()):
        if os.environ.get("CI"):
            pytest.fail("conformance suite not installed (run: cd tools/conformance && npm ci)")
        pytest.skip("conformance suite not installed")
    proc = subprocess.run(
        [str(NODE), str(SUITE), "server", "--url", live_server.mcp_url, "--scenario", scenario],
        capture_output=True, text=True, timeout=180,
    )
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    summary = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", output)
    assert proc.returncode == 0 and summary, output[-3000:]
    passed, total, failed = map(int, summary.groups())
    assert failed == 0 and passed == total > 0, output[-3000:]
