"""``python -m app check`` against the running server, over HTTP, as an operator would run it."""

from __future__ import annotations

import subprocess
import sys

from tests.e2e.server import ROOT, LiveServer


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
