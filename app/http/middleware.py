"""Pure ASGI middleware, composed by wrapping in ``app.main``."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.request_info import reset_request_info, set_request_info

log = structlog.get_logger("app.http")
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
        info: dict = {}
        token = set_request_info(info)
        structlog.contextvars.bind_contextvars(request_id=request_id)
        status = 500
        started = time.perf_counter()
        response_started = False

        async def send_wrapper(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = int(message["status"])
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-request-id", request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except Exception:
            log.exception("http.unhandled_error", path=scope.get("path"))
            if not response_started:
                await send_json(send, 500, {"error": "internal_error", "request_id": request_id},
                                [(b"x-request-id", request_id.encode())])
            status = 500
        finally:
            fields = dict(info)  # filled by the MCP layer (app.mcp.middleware.ToolCallLog)
            fields.setdefault("protocol_version", _header(scope, b"mcp-protocol-version"))
            log.info("http.request", method=scope.get("method"), path=scope.get("path"), status=status,
                     duration_ms=round((time.perf_counter() - started) * 1000, 2), **fields)
            structlog.contextvars.unbind_contextvars("request_id")
            reset_request_info(token)


class ChatGPTHeaderNormalizer:
    """ChatGPT's tool scanner has posted ``application/octet-stream`` and ``Accept: */*`` to /mcp.

    The SDK rejects both with 400/406; the body is JSON-RPC either way, so the
    headers are rewritten to what the transport expects.
    """

    def __init__(self, app: ASGIApp, path: str = "/mcp") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].rstrip("/") == self.path:
            updates: dict[bytes, bytes] = {}
            ctype = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
            if ctype in ("", "application/octet-stream", "text/plain"):
                updates[b"content-type"] = b"application/json"
            accept = (_header(scope, b"accept") or "").strip()
            if accept in ("", "*/*") or ("application/json" not in accept and "*/*" in accept):
                updates[b"accept"] = b"application/json, text/event-stream"
            if updates:
                scope = _replace_headers(scope, updates)
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """Reject bodies over the limit with a JSON 413, before any of it is parsed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(scope, receive, send)
            return
        # Chunked bodies carry no length: count as they stream and stop at the limit.
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, limited_receive, send)
        except _BodyTooLarge:
            await self._reject(scope, receive, send)

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_json(send, 413, {"error": "request_too_large",
                                    "error_description": f"Request body exceeds {self.max_bytes} bytes."},
                        [(b"connection", b"close")])


class _BodyTooLarge(Exception):
    pass
