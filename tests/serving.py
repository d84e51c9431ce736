"""Serve an ASGI app built in the test process on a real loopback socket (uvicorn in a thread).

For tests that need real HTTP AND test-configured pieces (a token verifier, extra
features); tests of the server exactly as deployed use ``tests/e2e/server.py``.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import uvicorn
from starlette.types import ASGIApp


@contextmanager
def serving(build: Callable[[str], ASGIApp]) -> Iterator[str]:
    """``build(base_url)`` returns the app; yields the base URL while it is served."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(build(base_url), log_config=None, lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)  # start-up polling of a server thread, not a test delay
    try:
        yield base_url
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


S = TypeVar("S", bound=socketserver.BaseServer)


@contextmanager
def answering(server: S) -> Iterator[S]:
    """A stdlib server (http.server's) answering from a thread of its own for the duration of the block."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
