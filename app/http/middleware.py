"""Pure ASGI middleware, composed by wrapping in ``app.main``."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable

import structlog
from opentelemetry import trace
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app.logging import write_through
from app.observability.metrics import Metrics

log = structlog.get_logger("app.http")
CLIENT_CLOSED_REQUEST = 499
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


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
    # uvicorn annotates ASGI with its own TypedDicts, starlette with plain mappings: the same
    # interface, two spellings that neither accepts of the other.
    return ProxyHeadersMiddleware(  # pyright: ignore[reportReturnType] (see above)
        app, trusted_hosts=list(trusted_proxies))  # pyright: ignore[reportArgumentType] (see above)


class AccessLogMiddleware:
    """Request id in, one ``http.request`` event out, and a JSON 500 instead of a traceback.

    Also where a request is measured (``metrics``: duration by method, route and status) and where the trace
    context of its log lines starts: the ``traceparent`` header's trace id is bound for every line of the
    request (so lines correlate with the caller's trace even when this server exports none), and with tracing
    on, the HTTP server span around this layer is named after the route the router matched (when the response
    starts: the span ends with its last byte, before this layer's own line).
    """

    def __init__(self, app: ASGIApp, metrics: Metrics | None = None) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = traceparent = None
        for key, value in scope.get("headers", ()):
            if key == b"x-request-id":
                incoming = value.decode("latin-1")
            elif key == b"traceparent" and traceparent is None:  # the first, as OpenTelemetry's propagator reads
                traceparent = value.decode("latin-1")
        request_id = incoming if incoming and _REQUEST_ID_RE.match(incoming) else uuid.uuid4().hex
        bound = {"request_id": request_id}
        if traceparent is not None and (trace_id := trace_id_of(traceparent)):
            bound["trace_id"] = trace_id
        structlog.contextvars.bind_contextvars(**bound)
        status = 500
        started = time.perf_counter()
        response_started = False
        response_ended = False
        disconnected = False

        async def receive_wrapper() -> Message:
            nonlocal disconnected
            message = await receive()
            # After the last byte was sent, a disconnect is the exchange ending, not the client leaving:
            # a streamed answer's own task waits for it (the SDK's SSE transports).
            if message["type"] == "http.disconnect" and not response_ended:
                disconnected = True
            return message

        async def send_wrapper(message: Message) -> None:
            nonlocal status, response_started, response_ended
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                response_ended = True
            if message["type"] == "http.response.start":
                response_started = True
                status = int(message["status"])
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-request-id", request_id.encode())]}
                # Now, while the server span is open (it ends with the response's last byte), and the router
                # has run: the span is named after the route.
                span = trace.get_current_span()
                if span.is_recording() and (route := getattr(scope.get("route"), "path", "")):
                    span.update_name(f"{scope.get('method', '')} {route}")
                    span.set_attribute("http.route", route)
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
            elapsed = time.perf_counter() - started
            method = scope.get("method", "")
            # The route's template (/files/blob/{sha:path}), never the path: bounded, and free of what a path holds.
            route = getattr(scope.get("route"), "path", "")
            if self.metrics is not None:
                self.metrics.http_request(method, route, status, elapsed)
            # HTTP facts only: the MCP layer logs its own event (app.mcp.middleware.ToolCallLog).
            client = scope.get("client")
            log.info("http.request", method=method, path=scope.get("path"), status=status,
                     duration_ms=round(elapsed * 1000, 2), client=client[0] if client else None)
            structlog.contextvars.unbind_contextvars(*bound)


_TRACEPARENT_RE = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")


def trace_id_of(traceparent: str) -> str | None:
    """The trace id of a W3C ``traceparent`` value, or None for one that is malformed or all zeros."""
    traceparent = traceparent.strip()
    match = _TRACEPARENT_RE.match(traceparent)
    if match is None or match.group(1) == "0" * 32 or traceparent.startswith("ff"):
        return None
    return match.group(1)


class McpPathAlias:
    """``/mcp/`` is served as ``/mcp``: people paste either, and a redirect loses POST bodies in some clients.

    The scope is changed in place, as Starlette's router does: the layers above see what the ones below set
    in it (the route the access log measures by)."""

    def __init__(self, app: ASGIApp, path: str = "/mcp") -> None:
        self.app = app
        self.path = path
        self.alias = path + "/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.alias:
            scope["path"], scope["raw_path"] = self.path, self.path.encode()
        await self.app(scope, receive, send)
