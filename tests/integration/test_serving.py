"""serve's HTTP protocol (app.http.serving.DeadlineProtocol) around an app that is slow on purpose: the body
deadline is the client's time, never the server's (a body it has not read yet, a client waiting for 100 Continue).
The slow clients themselves are in tests/e2e/test_lifecycle.py."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import httpx
from starlette.types import Receive, Scope, Send
from uvicorn.server import Server

from app.http.serving import ServeConfig

BODY_S = 1.0
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


@contextmanager
def served() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = ServeConfig(slow_reader, log_config=None, lifespan="off", access_log=False, header_timeout=1.0,
                         body_timeout=BODY_S, send_timeout=5.0)
    server = Server(config)
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
