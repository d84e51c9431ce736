"""The speed-up package's HTTP protocol (app/tuning/protocol.py, DeadlineProtocol) around an app that is slow on
purpose: the body deadline is the client's time, never the server's (a body it has not read yet, a client waiting
for 100 Continue). The slow clients themselves are in tests/e2e/test_lifecycle.py and test_tuned_protocol.py."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.serving import MAX_HEAD_BYTES
from app.tuning.protocol import Deadlines, deadline_protocol

pytestmark = pytest.mark.tuning

BODY_S = 1.0
HEADER_S = 1.0
APP_PAUSE_S = 2.5  # longer than the body deadline


async def slow_reader(scope: Scope, receive: Receive, send: Send) -> None:
    """Takes its time before reading the body (as an app that checks something first would), then counts it."""
    if scope["type"] != "http":
        return
    await anyio.sleep(APP_PAUSE_S)
    size, more = 0, True
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = str(size).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def by_path(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers at once, or after the seconds its query names (/sleep?1.6), with its path."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/sleep":
        await anyio.sleep(float(scope["query_string"] or 0))
    body = scope["path"].encode()
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def served(app: ASGIApp = slow_reader, body_timeout: float = BODY_S) -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    protocol = deadline_protocol(Deadlines(header=HEADER_S, body=body_timeout, send=5.0))
    config = uvicorn.Config(app, log_config=None, lifespan="off", access_log=False, http=protocol, ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)  # start-up polling of a server thread
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


def test_a_large_body_sent_at_once_is_not_cut_off_while_the_app_has_not_read_it():
    body = b"x" * 2_000_000  # past uvicorn's 64 KiB buffer: it stops reading until the app does
    with served() as port:
        response = httpx.post(f"http://127.0.0.1:{port}/", content=body, timeout=30)
    assert (response.status_code, response.text) == (200, str(len(body)))


def test_a_client_waiting_for_100_continue_is_not_cut_off_while_the_app_has_not_read():
    with served() as port, socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n")
        interim = sock.recv(1024)
        assert interim.startswith(b"HTTP/1.1 100 ")
        sock.sendall(b"hello")
        answer = b""
        while not answer.endswith(b"\r\n\r\n5"):
            chunk = sock.recv(1024)
            assert chunk, answer
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 ")


def read_all(sock: socket.socket) -> bytes:
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return answer


def test_a_pipelined_request_that_runs_past_the_header_deadline_is_answered():
    with served(by_path) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        # The second request is parsed while the first runs; its own run (1.6 s) is no client late with headers.
        sock.sendall(b"GET /fast HTTP/1.1\r\nhost: x\r\n\r\n"
                     b"GET /sleep?1.6 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        answer = read_all(sock)
    assert answer.count(b"HTTP/1.1 200 ") == 2 and answer.endswith(b"/sleep")
    assert b"408" not in answer


def test_the_unfinished_head_of_a_pipelined_request_has_the_header_deadline():
    with served(by_path, body_timeout=10) as port, socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /fast HTTP/1.1\r\nhost: x\r\n\r\nGET /b HTTP/1.1\r\nHo")  # and no more
        answer = read_all(sock)
        elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 200 ") and b"HTTP/1.1 408 Request Timeout" in answer
    assert elapsed < HEADER_S + 2  # the header deadline, not the body's (10 s)


def test_a_header_that_never_ends_is_refused_before_it_grows_past_the_bound():
    sent = 0
    with served(by_path) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /fast HTTP/1.1\r\nhost: x\r\nx-big: ")
        try:
            while sent < 5_000_000:  # no CRLF, ever: the parser hands the header to no callback
                sock.sendall(b"a" * 4096)
                sent += 4096
                time.sleep(0.001)  # separate reads, as a client streaming it would arrive
        except OSError:  # the server closed the connection
            pass
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert sent < 1_000_000  # refused near the bound (plus what the kernel buffers), not at the deadline


@pytest.mark.parametrize("version,hosts", [(b"1.1", b""), (b"1.1", b"host: a\r\nhost: b\r\n"),
                                           (b"1.0", b"host: a\r\nhost: b\r\n")],
                         ids=["no Host", "two Hosts", "two Hosts, HTTP/1.0"])
def test_a_request_without_exactly_one_host_is_refused(version: bytes, hosts: bytes):
    with served(by_path) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /fast HTTP/" + version + b"\r\n" + hosts + b"\r\n")
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 400 ")


def test_an_http_1_0_request_may_come_without_host():
    with served(by_path) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /fast HTTP/1.0\r\n\r\n")
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"/fast")


def test_a_head_within_the_bound_over_many_reads_is_served():
    head = b"GET /fast HTTP/1.1\r\nhost: x\r\n" + b"".join(b"x-h%d: %s\r\n" % (i, b"v" * 90) for i in range(150))
    assert MAX_HEAD_BYTES - 2048 < len(head) < MAX_HEAD_BYTES
    with served(by_path) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for i in range(0, len(head), 1000):
            sock.sendall(head[i:i + 1000])
            time.sleep(0.002)
        sock.sendall(b"connection: close\r\n\r\n")
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"/fast")


@pytest.mark.parametrize("upgrade", [b"upgrade: foo\r\nconnection: Upgrade\r\n",
                                     b"upgrade: h2c\r\nconnection: Upgrade, HTTP2-Settings\r\n",
                                     b"upgrade: websocket\r\nconnection: upgrade\r\n"],
                         ids=["any protocol", "h2c", "websocket"])
def test_a_request_that_asks_to_switch_protocols_is_refused_and_nothing_in_its_body_runs(upgrade: bytes):
    hidden = b"GET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n"
    body = b"\r\n" * 150_000 + hidden  # past one read: llhttp would hand it to the new protocol, then parse on
    with served(by_path) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nhost: x\r\n" + upgrade + b"content-length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
        except OSError:  # closed while the body was on its way
            pass
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 400 ") and answer.count(b"HTTP/1.1 ") == 1
    assert b"/smuggled" not in answer
