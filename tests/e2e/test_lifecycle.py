"""The server's lifecycle as a fleet runs it: SIGTERM (docker stop, a rolling deploy) stops accepting,
lets the request in flight finish, writes the log to its last line and exits 0, on one worker and on two.
Slow clients: tests/e2e/test_slow_clients.py (the stock server) and test_tuned_protocol.py (the speed-up
package's protocol)."""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.server import LiveServer
from tests.filehost import FileServer, serving_files

# Signals, deadlines and connections: the database behind the server never decides them (its outage has tests
# of its own, on both databases).
pytestmark = [pytest.mark.demo("files"), pytest.mark.any_database]

SLOW_FETCH_S = 2.0


@pytest.fixture
def files() -> Iterator[FileServer]:
    with serving_files() as server:
        yield server


def analyze(server: LiveServer, url: str) -> dict[str, Any]:
    file = {"download_url": url, "file_id": f"file_{uuid.uuid4().hex}"}
    response = httpx.post(server.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                "params": {"name": "analyze_file", "arguments": {"file": file}}},
                          headers={"accept": "application/json, text/event-stream",
                                   "mcp-protocol-version": "2025-06-18"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def slow_call_in_flight(server: LiveServer, files: FileServer) -> tuple[threading.Thread, dict[str, Any]]:
    """An analyze_file call whose file fetch takes SLOW_FETCH_S, returned once the server is fetching it."""
    url = files.offer(b"name,legs\nowl,2\ncrab,10\n", "text/csv", delay=SLOW_FETCH_S)
    answer: dict[str, Any] = {}
    caller = threading.Thread(target=lambda: answer.update(analyze(server, url)))
    caller.start()
    deadline = time.monotonic() + 10
    while files.hits == 0 and time.monotonic() < deadline:
        time.sleep(0.01)  # until the server is fetching the file: its request is in flight
    assert files.hits == 1
    return caller, answer


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_lets_the_request_in_flight_finish_writes_the_log_and_exits_0(
        workers: int, database_url: str, tmp_path: Path, files: FileServer):
    server = LiveServer(database_url, tmp_path / "server.log", workers=workers,
                        extra_env={"APP_VAR_DIR": str(tmp_path / "var"), "APP_SHUTDOWN_GRACE": "60",
                                   "APP_OUTBOUND_ALLOWLIST": files.origin.removeprefix("http://")}).start()
    try:
        caller, answer = slow_call_in_flight(server, files)
        server.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        caller.join(70)
        exit_code = server.process.wait(70)
        stopped = time.monotonic() - signalled
    finally:
        server.stop()

    assert answer.get("isError") is False, answer
    assert answer["structuredContent"]["report"]["file_id"]
    assert exit_code == 0
    # Drained when the request finished, not at the grace period's end: far from both, so that a
    # loaded machine (a CI run saw 16.6 s against a 15 s grace) does not blur the two.
    assert stopped < 40
    events = [json.loads(line) for line in server.log_lines() if line.startswith("{")]
    finished = {e["pid"] for e in events if e["event"].startswith("Finished server process")}
    calls = [e for e in events if e.get("event") == "mcp.tool_call" and e.get("tool") == "analyze_file"]
    assert len(calls) == 1 and calls[0]["outcome"] == "ok"
    if workers == 1:
        assert events[-1]["event"] == f"Finished server process [{server.process.pid}]"
    else:
        assert len(finished) == 2  # both workers wrote their last line
        assert events[-1]["event"] == f"Stopping parent process [{server.process.pid}]"


def test_after_sigterm_new_connections_are_refused_while_the_request_in_flight_finishes(
        database_url: str, tmp_path: Path, files: FileServer):
    server = LiveServer(database_url, tmp_path / "server.log",
                        extra_env={"APP_VAR_DIR": str(tmp_path / "var"),
                                   "APP_OUTBOUND_ALLOWLIST": files.origin.removeprefix("http://")}).start()
    try:
        caller, answer = slow_call_in_flight(server, files)
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # uvicorn closes its listening socket on its next tick (0.1 s)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{server.base_url}/healthz", timeout=2)
        caller.join(30)
        assert server.process.wait(30) == 0
    finally:
        server.stop()
    assert answer.get("isError") is False, answer
