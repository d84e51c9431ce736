"""``python -m app check`` against the running server, over HTTP, as an operator would run it."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from tests.e2e.server import ROOT, LiveServer, free_port

pytestmark = pytest.mark.any_database  # the linter reads descriptors over HTTP, never the database


def test_check_passes_on_the_running_server(live_server: LiveServer):
    proc = subprocess.run([sys.executable, "-m", "app", "check", "--url", live_server.mcp_url],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok: ") and " tools, " in proc.stdout


def test_check_fails_with_a_clear_message_when_nothing_listens():
    proc = subprocess.run([sys.executable, "-m", "app", "check", "--url", "http://127.0.0.1:9/mcp"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "cannot reach" in proc.stderr and "Traceback" not in proc.stderr


def test_check_flags_a_plain_stateful_sdk_server_line_by_line(tmp_path):
    port = free_port()
    server = subprocess.Popen([sys.executable, str(ROOT / "tests/e2e/fixtures/plain_sdk_server.py"), str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # readiness polling of a child process
            try:
                httpx.post(url, content=b"{}", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        proc = subprocess.run([sys.executable, "-m", "app", "check", "--url", url],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert "tool echo: annotation readOnlyHint is missing" in lines
    assert "tool echo: securitySchemes must be declared at the top level and mirrored in _meta" in lines
