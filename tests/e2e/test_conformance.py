"""The MCP conformance suite (npm ``@modelcontextprotocol/conformance``, pinned in
tools/conformance/package.json) against the real server, on both protocol eras.

Every scenario a revision requires (``--requirements``) runs against
``python -m tests.conformance_server`` (serve's stack with the discovered features and the suite's
fixtures, tests/conformance_feature.py) with two workers, so a multi-round-trip request's retry
may land on the other worker and must open the state the first one sealed. On 2026-07-28 every
scenario must pass; on 2025-11-25 every one but those listed, each with its reason, in
conformance-expected-failures.2025-11-25.yml (the suite fails when a listed one passes).

The suite needs Node >= 22; ``./dev test`` installs it (and a Node 22 binary) from npm under
tools/conformance. Off CI a missing install skips; on CI it fails.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import ROOT, LiveServer

TOOLS = ROOT / "tools" / "conformance" / "node_modules"
ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
    platform.machine().lower(), "x64"
)
NODE = TOOLS / f"node-linux-{ARCH}" / "bin" / "node"
SUITE = TOOLS / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
EXPECTED = {"2025-11-25": Path(__file__).with_name("conformance-expected-failures.2025-11-25.yml")}
# The scenarios speak the protocol; the database behind the server is never in question.
pytestmark = pytest.mark.any_database


def suite(*args: str, timeout: float = 300) -> tuple[int, str]:
    if not (NODE.exists() and SUITE.exists()):
        if os.environ.get("CI"):
            pytest.fail("conformance suite not installed (run: cd tools/conformance && npm ci)")
        pytest.skip("conformance suite not installed")
    proc = subprocess.run(
        [str(NODE), str(SUITE), *args], capture_output=True, text=True, timeout=timeout
    )
    return proc.returncode, re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)


@pytest.fixture(scope="module")
def conformance_server(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    server = LiveServer(
        database_url,
        tmp_path_factory.mktemp("conformance") / "server.log",
        module="tests.conformance_server",
        workers=2,
    ).start()
    yield server
    server.stop()


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25"])
def test_every_scenario_a_revision_requires_passes_or_is_an_expected_failure(
    conformance_server: LiveServer, revision: str
):
    expected = ["--expected-failures", str(EXPECTED[revision])] if revision in EXPECTED else []
    code, output = suite(
        "server", "--url", conformance_server.mcp_url, "--requirements", revision, *expected
    )
    scored = re.findall(r"^([✓✗]) ([a-z0-9-]+): (\d+) passed, (\d+) failed", output, re.M)
    assert code == 0 and len(scored) > 30, output[-4000:]
    # What the suite scored as passed did run checks (not a scenario that found nothing to call).
    passed = {name for mark, name, ok, _ in scored if mark == "✓" and int(ok) > 0}
    for name in (
        "tools-call-with-progress",
        "tools-call-image",
        "prompts-get-with-args",
        "completion-complete",
        "resources-templates-read",
    ):
        assert name in passed, output[-4000:]
    if revision == "2026-07-28":
        assert {name for name in passed if name.startswith("input-required-result-")} >= {
            "input-required-result-multi-round",
            "input-required-result-tampered-state",
            "input-required-result-non-tool-request",
        }, output[-4000:]
