"""Progress of a long file analysis, over real HTTP, on both protocol eras: a call that carries a
progressToken gets a streamed (SSE) answer with ``notifications/progress`` while the file arrives
and while it is analysed, then the result; a call without one gets the plain JSON answer.

The file is a 20 MB CSV from a loopback host that sends it at 8 MB/s (tests/filehost.py), to
`python -m app serve`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.server import ROOT, LiveServer
from tests.e2e.test_conformance import NODE
from tests.filehost import FileServer, serving_files

pytestmark = [pytest.mark.demo("files"), pytest.mark.any_database]
SIZE = 20_000_000
RATE = 8_000_000  # bytes a second: the download takes 2.5 s
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "progress-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _csv(size: int) -> bytes:
    lines, total, i = ["id,animal,weight\n"], 17, 0
    while total < size:
        line = f"{i},animal {i % 97},{(i * 7919) % 1000 / 10}\n"
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines).encode()[:size].rsplit(b"\n", 1)[0] + b"\n"


@pytest.fixture(scope="module")
def files() -> Iterator[FileServer]:
    with serving_files() as server:
        yield server


@pytest.fixture(scope="module")
def server(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, files: FileServer
) -> Iterator[LiveServer]:
    logs: Path = tmp_path_factory.mktemp("progress")
    live = LiveServer(
        database_url,
        logs / "server.log",
        extra_env={
            "APP_VAR_DIR": str(logs / "var"),
            "APP_OUTBOUND_ALLOWLIST": files.origin.removeprefix("http://"),
            "APP_FILES_ANON_QUOTA": str(10 * SIZE),
        },
    ).start()
    yield live
    live.stop()


def _call(server: LiveServer, url: str, modern: bool, token: str | None) -> httpx.Response:
    params: dict[str, Any] = {
        "name": "analyze_file",
        "arguments": {"file": {"download_url": url, "file_id": f"file_{uuid.uuid4().hex}"}},
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    meta: dict[str, Any] = dict(ENVELOPE) if modern else {}
    if token is not None:
        meta["progressToken"] = token
    if meta:
        params["_meta"] = meta
    if modern:
        headers |= {
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "analyze_file",
        }
    else:
        headers["mcp-protocol-version"] = "2025-11-25"
    return httpx.Request(
        "POST",
        server.mcp_url,
        json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params},
        headers=headers,
    )


def _events(response: httpx.Response) -> Iterator[tuple[float, dict[str, Any]]]:
    """Each SSE event's message, with when it arrived."""
    for line in response.iter_lines():
        if line.startswith("data:") and line[5:].strip():
            yield time.monotonic(), json.loads(line[5:])


@pytest.mark.parametrize("modern", [True, False], ids=["2026-07-28", "2025-11-25"])
def test_a_call_that_asks_for_progress_hears_of_the_download_and_the_analysis_before_its_result(
    server: LiveServer, files: FileServer, modern: bool
):
    body = _csv(SIZE)
    name = uuid.uuid4().hex
    url = files.offer(body, "text/csv", name=name, rate=RATE)
    with httpx.Client(timeout=60) as client:
        sent = time.monotonic()
        response = client.send(_call(server, url, modern, token=f"t-{name}"), stream=True)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = list(_events(response))
        took = time.monotonic() - sent
    progress = [
        (at, m["params"]) for at, m in events if m.get("method") == "notifications/progress"
    ]
    results = [m for _, m in events if "result" in m or "error" in m]
    assert [m["id"] for m in results] == [7] and events[-1][1] is results[0]
    assert results[0]["result"]["isError"] is False, results[0]
    assert results[0]["result"]["structuredContent"]["file"]["size"] == len(body)
    assert all(p["progressToken"] == f"t-{name}" for _, p in progress)
    # The first arrives while the host is still sending (it sends for 2.5 s), the last equals the
    # total,
    # every one is more than the one before.
    assert progress and progress[0][0] < files.finished[name] - 0.5
    values = [p["progress"] for _, p in progress]
    assert values == sorted(set(values))
    assert progress[-1][1]["progress"] == progress[-1][1]["total"] == 2 * len(body)
    messages = [p.get("message", "") for _, p in progress]
    assert any(m.startswith("Downloading the file") for m in messages)
    assert messages[-1].startswith("Analysing the file")
    # A few a second (at most four, and the last), not one per chunk nor none at all.
    assert 5 <= len(progress) <= 4 * took + 2


@pytest.mark.parametrize("modern", [True, False], ids=["2026-07-28", "2025-11-25"])
def test_without_a_progress_token_the_answer_is_plain_json(
    server: LiveServer, files: FileServer, modern: bool
):
    url = files.offer(b"name,legs\nowl,2\ncrab,10\n", "text/csv")
    with httpx.Client(timeout=30) as client:
        response = client.send(_call(server, url, modern, token=None))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["structuredContent"]["file"]["size"] == 24


def test_mcp_inspectors_cli_asking_for_progress_reads_the_streamed_answer(
    server: LiveServer, files: FileServer
):
    """A client of another make (MCP Inspector's CLI, pinned under tools/conformance): it sends the
    token, reads the stream (progress, then the result) and prints the result."""
    launcher = (
        ROOT
        / "tools"
        / "conformance"
        / "node_modules"
        / "@modelcontextprotocol"
        / "inspector"
        / "clients"
        / "launcher"
        / "build"
        / "index.js"
    )
    if not (NODE.exists() and launcher.exists()):
        if os.environ.get("CI"):
            pytest.fail("MCP Inspector not installed (run: cd tools/conformance && npm ci)")
        pytest.skip("MCP Inspector not installed")
    body = _csv(2_000_000)
    url = files.offer(body, "text/csv", rate=1_000_000)
    file = json.dumps({"download_url": url, "file_id": f"file_{uuid.uuid4().hex}"})
    done = subprocess.run(
        [
            str(NODE),
            str(launcher),
            "--cli",
            server.mcp_url,
            "--transport",
            "http",
            "--method",
            "tools/call",
            "--tool-name",
            "analyze_file",
            "--tool-args-json",
            json.dumps({"file": json.loads(file)}),
            "--tool-metadata",
            "progressToken=inspector-1",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env={
            **os.environ,
            "MCP_CATALOG_PATH": os.devnull,
            "NO_COLOR": "1",
            "MCP_INSPECTOR_SECRET_STORE": "memory",
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])["result"]
    assert result["isError"] is False and result["structuredContent"]["file"]["size"] == len(body)
    lines = [json.loads(line) for line in server.log_lines() if line.startswith("{")]
    assert any(
        line.get("event") == "mcp.progress_streamed" and line.get("tool") == "analyze_file"
        for line in lines
    ), "the call was not answered as a stream"


def test_a_streamed_answer_read_to_its_end_is_logged_as_served(server: LiveServer, files: FileServer):
    """The SSE transports wait for the client's disconnect after the last byte; that is not a client
    that left (499)."""
    url = files.offer(b"name,legs\nowl,2\n", "text/csv")
    request_id = f"streamed-{uuid.uuid4().hex[:8]}"
    request = _call(server, url, True, token="t-logged")
    request.headers["x-request-id"] = request_id
    with httpx.Client(timeout=30) as client:
        response = client.send(request, stream=True)
        assert response.headers["content-type"].startswith("text/event-stream")
        list(_events(response))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in server.log_lines() if line.startswith("{")]
        logged = [line for line in lines if line.get("event") == "http.request"
                  and line.get("request_id") == request_id]
        if logged:
            break
        time.sleep(0.05)  # the log is written by the server's own thread
    assert [line["status"] for line in logged] == [200]


def test_a_progress_token_too_long_to_repeat_gets_the_json_answer(server: LiveServer, files: FileServer):
    url = files.offer(b"name,legs\nowl,2\n", "text/csv")
    with httpx.Client(timeout=30) as client:
        response = client.send(_call(server, url, True, token="t" * 257))
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["isError"] is False
