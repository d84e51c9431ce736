"""The server's lifecycle as a fleet runs it: SIGTERM (docker stop, a rolling deploy) stops accepting,
lets the request in flight finish, writes the log to its last line and exits 0, on one worker and on two."""

from __future__ import annotations

import json
import select
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.http.serving import MAX_HEAD_BYTES
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
                        extra_env={"APP_VAR_DIR": str(tmp_path / "var"), "APP_SHUTDOWN_GRACE": "15",
                                   "APP_OUTBOUND_ALLOWLIST": files.origin.removeprefix("http://")}).start()
    try:
        caller, answer = slow_call_in_flight(server, files)
        server.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        caller.join(30)
        exit_code = server.process.wait(30)
        stopped = time.monotonic() - signalled
    finally:
        server.stop()

    assert answer.get("isError") is False, answer
    assert answer["structuredContent"]["report"]["file_id"]
    assert exit_code == 0
    assert stopped < 15  # drained when the request finished, not at the grace period's end
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


HEADER_S, BODY_S, SEND_S = 2.0, 3.0, 2.0  # the test server's deadlines (defaults: 10 s, 30 s and 30 s)


@pytest.fixture(scope="module")
def deadlines(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("deadlines")
    server = LiveServer(database_url, tmp / "server.log",
                        extra_env={"APP_VAR_DIR": str(tmp / "var"), "APP_HTTP_HEADER_TIMEOUT": str(HEADER_S),
                                   "APP_HTTP_BODY_TIMEOUT": str(BODY_S),
                                   "APP_HTTP_SEND_TIMEOUT": str(SEND_S)}).start()
    yield server
    server.stop()


def connect(server: LiveServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=HEADER_S + BODY_S + 5)


def read_until_closed(sock: socket.socket) -> bytes:
    """What the server sent until it closed (or reset) the connection."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def trickle_until_closed(socks: list[socket.socket], pieces: Iterator[bytes], every: float) -> dict[int, bytes]:
    """Send the next piece to every open socket every ``every`` seconds; what each got once the server closed it."""
    got: dict[int, bytes] = {}
    open_ = {s.fileno(): s for s in socks}
    deadline = time.monotonic() + HEADER_S + BODY_S + 10
    for piece in pieces:
        for sock in list(open_.values()):
            try:
                sock.sendall(piece)
            except OSError:
                pass
        ready, _, _ = select.select(list(open_.values()), [], [], every)
        for sock in ready:
            data = sock.recv(65536)
            got[sock.fileno()] = got.get(sock.fileno(), b"") + data
            if not data or b"408" in data:
                open_.pop(sock.fileno())
        if not open_ or time.monotonic() > deadline:
            break
    return got if not open_ else {**got, **{fd: b"STILL OPEN" for fd in open_}}


def header_lines() -> Iterator[bytes]:
    yield b"GET /healthz HTTP/1.1\r\n"
    for i in range(1000):
        yield f"x-slow-{i}: 1\r\n".encode()


def test_forty_clients_trickling_headers_are_answered_408_and_cut_off_at_the_header_deadline(deadlines: LiveServer):
    socks = [connect(deadlines) for _ in range(40)]
    started = time.monotonic()
    try:
        got = trickle_until_closed(socks, header_lines(), every=0.5)
        elapsed = time.monotonic() - started
    finally:
        for sock in socks:
            sock.close()
    assert len(got) == 40
    assert all(answer.startswith(b"HTTP/1.1 408 Request Timeout") for answer in got.values()), set(got.values())
    assert HEADER_S - 0.5 < elapsed < HEADER_S + 2


def test_a_request_line_with_no_headers_after_it_is_cut_off(deadlines: LiveServer):
    with connect(deadlines) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        started = time.monotonic()
        answer = sock.recv(65536)
        assert sock.recv(65536) == b""  # closed
        assert time.monotonic() - started < HEADER_S + 1
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout")


def test_a_request_head_over_the_bound_is_refused_at_once_and_the_connection_closed(deadlines: LiveServer):
    with connect(deadlines) as sock:
        started = time.monotonic()
        try:  # the server may close while the rest is still on its way
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * (MAX_HEAD_BYTES + 1) + b"\r\n\r\n")
        except OSError:
            pass
        answer = read_until_closed(sock)
        elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert elapsed < HEADER_S  # refused as it came, not left to the deadline


def test_a_request_head_just_under_the_bound_is_served(deadlines: LiveServer):
    with httpx.Client(base_url=deadlines.base_url) as client:
        response = client.get("/healthz", headers={"x-big": "a" * (MAX_HEAD_BYTES - 512)})
    assert response.status_code == 200


def test_a_connection_that_never_sends_a_byte_is_closed_without_an_answer(deadlines: LiveServer):
    with connect(deadlines) as sock:
        started = time.monotonic()
        assert sock.recv(65536) == b""
        assert time.monotonic() - started < HEADER_S + 1


def test_a_body_trickled_a_byte_at_a_time_is_answered_408_at_the_body_deadline(deadlines: LiveServer):
    head = (b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"accept: application/json, text/event-stream\r\ncontent-length: 200\r\n\r\n")

    def body() -> Iterator[bytes]:
        yield head
        while True:
            yield b" "

    with connect(deadlines) as sock:
        started = time.monotonic()
        got = trickle_until_closed([sock], body(), every=0.5)
        elapsed = time.monotonic() - started
    assert list(got.values())[0].startswith(b"HTTP/1.1 408 Request Timeout")
    assert BODY_S - 0.5 < elapsed < BODY_S + 2
    # Not the server's error: the access log says 499 (client closed request), and nothing logs a traceback.
    events = deadlines.settled_log()
    assert [e["status"] for e in events if e.get("event") == "http.request" and e.get("path") == "/mcp"
            and e.get("status") != 200] == [499]
    assert [e["event"] for e in events if e.get("level") in ("error", "critical")] == []


def test_a_request_answered_before_its_body_was_in_gets_no_stray_408_afterwards(deadlines: LiveServer):
    with connect(deadlines) as sock:
        sock.sendall(b"POST /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n" + b"a" * 500)
        time.sleep(0.5)
        sock.sendall(b"a" * 500)  # in time: the answer (405) may already be on its way
        answered = b""
        started = time.monotonic()
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answered += chunk
        closed_after = time.monotonic() - started
    assert answered.startswith(b"HTTP/1.1 405 ")
    assert b"408" not in answered  # the body's tail is not a slow next request
    assert HEADER_S - 0.5 < closed_after < HEADER_S + 2  # idle afterwards: closed in silence at the deadline


def test_a_client_that_reads_none_of_the_answers_is_cut_off_at_the_send_deadline(deadlines: LiveServer):
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(SEND_S + 10)
    sock.connect(("127.0.0.1", deadlines.port))
    request = b"GET /.well-known/oauth-authorization-server HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
    with sock:
        sock.sendall(request * 3000)  # pipelined, and none of the answers is read
        time.sleep(SEND_S + 2)
        received = read_until_closed(sock)
    assert 0 < received.count(b"HTTP/1.1 200 ") < 3000
    assert [e["awaiting"] for e in deadlines.settled_log() if e.get("event") == "http.slow_client"
            and e.get("awaiting") == "the client to read"] == ["the client to read"]


def test_requests_in_time_on_a_kept_alive_connection_are_served_past_the_deadlines(deadlines: LiveServer):
    with httpx.Client(base_url=deadlines.base_url) as client:
        answers = []
        for _ in range(4):  # 4 x 0.9 s on one connection: longer than the header deadline in all
            answers.append(client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                       headers={"accept": "application/json, text/event-stream",
                                                "mcp-protocol-version": "2025-06-18"}).status_code)
            time.sleep(0.9)
    assert answers == [200, 200, 200, 200]
