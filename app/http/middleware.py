"""Pure ASGI middleware, composed by wrapping in ``app.main``."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app.logging import write_through

log = structlog.get_logger("app.http")
CLIENT_CLOSED_REQUEST = 499
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


def _replace_headers(scope: Scope, updates: dict[bytes, bytes]) -> Scope:
    headers = [(k, v) for k, v in scope.get("headers", ()) if k not in updates]
    headers.extend(updates.items())
    return {**scope, "headers": headers}


async def send_json(send: Send, status: int, body: dict, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": payload})


def log_written_through_shutdown(app: ASGIApp) -> ASGIApp:
    """Once the server starts the application's shutdown (its connections drained), every log line is
    written as it is logged: a uvicorn worker is ended by the SIGTERM it re-raises after its graceful
    shutdown, before a writer thread would write its last lines ("Finished server process")."""
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def receive_noting_shutdown() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                write_through()
            return message

        await app(scope, receive_noting_shutdown, send)

    return wrapped


def client_address(app: ASGIApp, trusted_proxies: list[str]) -> ASGIApp:
    """The client address every layer below sees (``scope["client"]``): the peer, or, when the peer is one of
    ``trusted_proxies``, the right-most ``X-Forwarded-For`` entry that is not a trusted proxy. Entries left
    of it were written by the client and are never believed. uvicorn's own middleware, in the app rather
    than in the server's flags, so any ASGI server (and every test) gets the same rule."""
    if "*" in trusted_proxies:  # with "*" uvicorn takes the LEFT-most entry, which the client writes
        raise ValueError("trusted_proxies cannot be '*'")
    return ProxyHeadersMiddleware(app, trusted_hosts=list(trusted_proxies))  # type: ignore[arg-type]


class AccessLogMiddleware:
    """Request id in, one ``http.request`` event out, and a JSON 500 instead of a traceback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = _header(scope, b"x-request-id")
        request_id = incoming if incoming and _REQUEST_ID_RE.match(incoming) else uuid.uuid4().hex
        structlog.contextvars.bind_contextvars(request_id=request_id)
        status = 500
        started = time.perf_counter()
        response_started = False
        disconnected = False

        async def receive_wrapper() -> Message:
            nonlocal disconnected
            message = await receive()
            if message["type"] == "http.disconnect":
                disconnected = True
            return message

        async def send_wrapper(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = int(message["status"])
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-request-id", request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive_wrapper, send_wrapper)
        except Exception as exc:
            if disconnected:  # what the client's leaving made the app raise: named, without a traceback
                log.info("http.client_gone", path=scope.get("path"), error=type(exc).__name__)
            else:
                log.exception("http.unhandled_error", path=scope.get("path"))
                if not response_started:
                    await send_json(send, 500, {"error": "internal_error", "request_id": request_id},
                                    [(b"x-request-id", request_id.encode())])
            status = 500
        finally:
            if disconnected:
                # The client left, or was cut off for being slow, before its request was read: not the
                # server's error, whatever the layers below made of it (nginx's 499, "client closed request").
                status = CLIENT_CLOSED_REQUEST
            # HTTP facts only: the MCP layer logs its own event (app.mcp.middleware.ToolCallLog).
            client = scope.get("client")
            log.info("http.request", method=scope.get("method"), path=scope.get("path"), status=status,
                     duration_ms=round((time.perf_counter() - started) * 1000, 2),
                     client=client[0] if client else None)
            structlog.contextvars.unbind_contextvars("request_id")


class McpRequestNormalizer:
    """Accept what real clients send to /mcp, in the shape the SDK transport expects, and answer in JSON.

    - ``/mcp/`` is served as ``/mcp`` (people paste either; a 307 loses POST bodies in some clients).
    - ChatGPT's tool scanner has posted ``application/octet-stream`` and ``Accept: */*``; the SDK
      rejects both with 400/406, yet the body is JSON-RPC either way.
    - The SDK's body limit (the one limit on /mcp) answers 413 in plain text; JSON-RPC clients get
      a JSON-RPC error instead, like the SDK's other HTTP-level errors.
    """

    def __init__(self, app: ASGIApp, path: str = "/mcp", max_body_bytes: int | None = None) -> None:
        self.app = app
        self.path = path
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path + "/":
            scope = {**scope, "path": self.path, "raw_path": self.path.encode()}
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == self.path:
            updates: dict[bytes, bytes] = {}
            ctype = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
            if ctype in ("", "application/octet-stream", "text/plain"):
                updates[b"content-type"] = b"application/json"
            accept = (_header(scope, b"accept") or "").strip()
            if accept in ("", "*/*") or ("application/json" not in accept and "*/*" in accept):
                updates[b"accept"] = b"application/json, text/event-stream"
            if updates:
                scope = _replace_headers(scope, updates)
            send = self._json_413(send)
        await self.app(scope, receive, send)

    def _json_413(self, send: Send) -> Send:
        replaced = False
        limit = f" (limit: {self.max_body_bytes} bytes)" if self.max_body_bytes else ""

        async def json_send(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 413:
                replaced = True
                await send_json(send, 413, {"jsonrpc": "2.0", "id": None,
                                            "error": {"code": -32600, "message": "Request body too large" + limit}},
                                [(b"connection", b"close")])
                return
            if not replaced:  # the SDK's own plain-text body is dropped
                await send(message)

        return json_send


class Shortcut:
    """Requests to ``path`` with one of ``methods`` go straight to ``endpoint``; the rest to ``app``.

    /mcp carries nearly all the traffic, and Starlette's router would try every other route's
    pattern and add its exception middleware first. The access log above already turns a crash
    into a JSON 500 with the request id, so /mcp loses nothing by skipping them.
    """

    def __init__(self, app: ASGIApp, path: str, methods: Iterable[str], endpoint: ASGIApp) -> None:
        self.app = app
        self.path = path
        self.methods = frozenset(methods)
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path and scope["method"] in self.methods:
            await self.endpoint(scope, receive, send)
        else:
            await self.app(scope, receive, send)
