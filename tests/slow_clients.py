"""Clients that are slow on purpose, against a server on a real socket: what each got once it was closed."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import httpx

from app.http.serving import MAX_HEAD_BYTES
from tests.e2e.server import LiveServer

HEADER_S, BODY_S, SEND_S = 2.0, 3.0, 2.0  # the test servers' deadlines (defaults: 10 s, 30 s and 30 s)
DEADLINES_ENV = {"APP_HTTP_HEADER_TIMEOUT": str(HEADER_S), "APP_HTTP_BODY_TIMEOUT": str(BODY_S),
                 "APP_HTTP_SEND_TIMEOUT": str(SEND_S)}
MCP_HEAD = (b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"accept: application/json, text/event-stream\r\ncontent-length: 200\r\n\r\n")


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=HEADER_S + BODY_S + 5)


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


def trickled_body() -> Iterator[bytes]:
    """A tools/call head declaring 200 bytes of body, then the body a byte at a time."""
    yield MCP_HEAD
    while True:
        yield b" "


# What holds on both protocols (tests/e2e/test_slow_clients.py: uvicorn's h11; test_tuned_protocol.py: the speed-up
# package's), checked once here.


def a_head_just_under_the_bound_is_served(base_url: str) -> None:
    with httpx.Client(base_url=base_url) as client:
        response = client.get("/healthz", headers={"x-big": "a" * (MAX_HEAD_BYTES - 512)})
    assert response.status_code == 200


def a_trickled_body_is_answered_408_at_the_body_deadline(server: LiveServer) -> list[dict]:
    """A body a byte every half second: 408 and closed at the body deadline; the access log's 499 (the client's
    leaving, not the server's error) and no error line. Returns the server's log for more checks."""
    with connect(server.port) as sock:
        started = time.monotonic()
        got = trickle_until_closed([sock], trickled_body(), every=0.5)
        elapsed = time.monotonic() - started
    [answer] = got.values()
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout") and b"connection: close" in answer.lower()
    assert BODY_S - 0.5 < elapsed < BODY_S + 2
    events = server.settled_log()
    assert [e["status"] for e in events if e.get("event") == "http.request" and e.get("path") == "/mcp"
            and e.get("status") != 200] == [499]
    assert [e["event"] for e in events if e.get("level") in ("error", "critical")] == []
    return events


def requests_in_time_on_a_kept_alive_connection_are_served(base_url: str) -> None:
    """4 x 0.9 s on one connection: longer than the header deadline and the body deadline in all."""
    with httpx.Client(base_url=base_url) as client:
        answers = []
        for _ in range(4):
            answers.append(client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                       headers={"accept": "application/json, text/event-stream",
                                                "mcp-protocol-version": "2025-06-18"}).status_code)
            time.sleep(0.9)
    assert answers == [200, 200, 200, 200]
