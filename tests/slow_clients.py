"""Clients that are slow on purpose, against a server on a real socket: what each got once it was closed."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

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
