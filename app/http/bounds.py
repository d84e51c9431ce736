"""Bounds the app keeps on a request itself, whatever server runs it: a head past ``MAX_HEAD_BYTES`` is
answered 431, a body that does not arrive in time 408.

The head: uvicorn's h11 refuses a head still unfinished past 16 KiB, but parses one that arrives whole in
a single read (up to the 256 KiB a read brings); this refuses that one too (counted as on the wire: the
request line, each header ``name: value`` and its line end), so the bound is the same on every path.

The body: stock uvicorn reads it for as long as the client keeps sending, a byte a second included, and
the app's task waits all along. Here the time the app spends waiting in ``receive()`` for a request's body
is added up; past ``body_timeout`` the app is told the client left (``http.disconnect``, so whatever it
was doing ends as for a client that hung up), and the client gets ``408 Request Timeout`` with
``Connection: close``, unless an answer had begun. Time the app spends not reading (it checks something
first) is not the client's; once the body's last part is in, nothing is counted.

A server that keeps both bounds itself says so in the request's ASGI extensions (``SERVER_BOUNDS``): the
speed-up package's protocol does (exactly, before the app is called, and at the same deadline), and this
layer then stands aside: two 408s for one request would race for one connection.
"""

from __future__ import annotations

import time

import anyio
import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.serving import MAX_HEAD_BYTES

log = structlog.get_logger("app.http")
SERVER_BOUNDS = "app.client_bounds"  # in scope["extensions"]: the server bounds heads and cuts slow bodies
_TIMEOUT_BODY = b"The request took too long to arrive.\n"
_TIMEOUT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close"),
                    (b"content-length", str(len(_TIMEOUT_BODY)).encode())]
_TOO_LARGE_BODY = b"The request's headers are too large.\n"
_TOO_LARGE_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close"),
                      (b"content-length", str(len(_TOO_LARGE_BODY)).encode())]


class ClientBounds:
    def __init__(self, app: ASGIApp, *, body_timeout: float, head_limit: int = MAX_HEAD_BYTES) -> None:
        self.app = app
        self.body_timeout = body_timeout
        self.head_limit = head_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or SERVER_BOUNDS in scope.get("extensions", ()):
            await self.app(scope, receive, send)
            return
        size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + 16  # method, version
        for name, value in scope["headers"]:
            size += len(name) + len(value) + 4
        if size > self.head_limit:
            self._log("http.head_too_large", scope)
            await send({"type": "http.response.start", "status": 431, "headers": _TOO_LARGE_HEADERS})
            await send({"type": "http.response.body", "body": _TOO_LARGE_BODY})
            return
        left = self.body_timeout
        body_in = answered = cut = False

        async def receive_in_time() -> Message:
            nonlocal left, body_in, cut
            if cut:
                return {"type": "http.disconnect"}  # as far as the app knows, the client is gone
            if body_in:
                return await receive()  # waiting for a disconnect is no body's time
            began = time.monotonic()
            with anyio.move_on_after(left):
                message = await receive()
                left -= time.monotonic() - began
                if message["type"] != "http.request" or not message.get("more_body", False):
                    body_in = True
                return message
            cut = True
            self._log("http.slow_client", scope, awaiting="body")
            if not answered:
                await send({"type": "http.response.start", "status": 408, "headers": _TIMEOUT_HEADERS})
                await send({"type": "http.response.body", "body": _TIMEOUT_BODY})
            return {"type": "http.disconnect"}

        async def send_unless_cut(message: Message) -> None:
            nonlocal answered
            if cut:
                return  # the client was answered 408: what the app still says goes nowhere
            if message["type"] == "http.response.start":
                answered = True
            await send(message)

        await self.app(scope, receive_in_time, send_unless_cut)

    @staticmethod
    def _log(event: str, scope: Scope, **fields: str) -> None:
        client = scope.get("client")
        log.info(event, peer=client[0] if client else None, **fields)
