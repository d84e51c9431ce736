"""The single-exchange lane: a legacy stateless JSON request answered in the ASGI task.

mcp 2.3 answers a 2026-07-28 request directly in the ASGI task, but a request on the
handshake-era paths (2025-06-18, 2025-11-25, no version header) still gets, per
request, a transport, a task group, a dispatcher loop and memory streams, all torn
down once its one answer is written. In stateless JSON mode none of that carries
anything: one JSON-RPC request in, one JSON-RPC response out. This lane hands such a
request to the SDK's own single-exchange driver (``mcp.server.runner.serve_one``) on
the same born-ready ``Connection`` the stateless transport builds, so the SDK's
validation, initialize handling, middleware chain (ours included) and result
serialisation run exactly as before; only the plumbing between them is skipped.

Everything else goes to the SDK transport untouched, body replayed: notifications,
responses, batches, anything that does not parse or validate, a 2026-07-28 (or unknown)
version header, a client that does not accept JSON, a request the transport security
settings refuse. So every error answer on /mcp is still the SDK's own, but one: a well-formed tools/call the
caller may not use, from a client that is not ChatGPT, is answered HTTP 401/403 before it gets here
(``app.auth.challenge``), after the same transport checks.

Two differences from the transport, both deliberate:
- a handler exception that is neither an ``MCPError`` nor a validation error is
  answered ``-32603 Internal error`` and logged; the dispatcher would put ``code 0``
  and the exception's text on the wire;
- notifications a handler emits mid-request (progress, log messages) are dropped, as
  they are by the transport in JSON-response mode, where the body holds only the answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.lowlevel.server import lifespan as sdk_default_lifespan
from mcp.server.runner import serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data, progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    ProgressToken,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from pydantic_core import from_json, to_json
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = structlog.get_logger("app.mcp")

_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")
_JSON_HEADERS = [(b"content-type", b"application/json")]
# What the stateless transport stamps on every message it frames in JSON-response mode.
_TRANSPORT = TransportContext(kind="streamable-http", can_send_request=False)


@dataclass
class ExchangeContext:
    """The ``DispatchContext`` of one request whose response body holds nothing but its answer.

    Structurally the SDK's ``mcp.shared.dispatcher.DispatchContext`` protocol: no back-channel
    (a server request would need a client reply with nowhere to land), and notifications have
    no wire (JSON-response mode writes only the answer), exactly as the stateless transport.
    """

    request_id: RequestId
    message_metadata: ServerMessageMetadata
    progress_token: ProgressToken | None = None
    transport: TransportContext = _TRANSPORT
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = field(default=False, init=False)

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None,
                               opts: CallOptions | None = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


class SingleExchangeLane:
    """ASGI app for ``POST /mcp`` in front of the SDK's stateless JSON transport (``fallback``).

    The lane reads the server, the transport security settings and the body limit off the
    transport's session manager, so it applies exactly the checks the transport would.
    """

    def __init__(self, manager: StreamableHTTPSessionManager, fallback: ASGIApp) -> None:
        if not (manager.stateless and manager.json_response):
            raise ValueError("the single-exchange lane serves a stateless, JSON-response transport only")
        if manager.app.lifespan is not sdk_default_lifespan:
            # The SDK transport enters the server lifespan on its own and keeps the state private,
            # so the two paths would each hold one. Resources belong to the composition root.
            raise ValueError("the single-exchange lane needs an MCP server without a lifespan "
                             "(open shared resources in the composition root instead)")
        self.server: Server[Any] = manager.app
        self.fallback = fallback
        self._security = TransportSecurityMiddleware(manager.security_settings)
        self._limited = RequestBodyLimitMiddleware(self._serve, manager.max_request_body_size)
        self._lifespan_state: Any = None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self.server.lifespan(self.server) as state:
            self._lifespan_state = state
            try:
                yield
            finally:
                self._lifespan_state = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self._lifespan_state is None:
            await self.fallback(scope, receive, send)
            return
        version = next((v.decode("latin-1") for k, v in scope["headers"] if k == _VERSION_HEADER), None)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.fallback(scope, receive, send)  # 2026-07-28 or unknown: the SDK's own single exchange
            return
        # The transport's body limit, in the transport's order: before anything looks at the body.
        await self._limited(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        first = await receive()  # the limit middleware hands over the whole body as one message
        replay = _replaying(first, receive)
        request = Request(scope, replay)
        refusal = await self._security.validate_request(request, is_post=True)
        if refusal is not None:  # the transport's first check, with the transport's answer (logged once)
            await refusal(scope, replay, send)
            return
        message = self._admit(request, first)
        if message is None:
            await self.fallback(scope, replay, send)
            return
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER) or DEFAULT_NEGOTIATED_VERSION
        # Born ready and without a back-channel: what the stateless transport builds per request.
        connection = Connection.from_envelope(version, None, None)
        dctx = ExchangeContext(request_id=message.id,
                               message_metadata=ServerMessageMetadata(request_context=request, can_send_request=False),
                               progress_token=progress_token_from_params(message.params))
        try:
            result = await serve_one(self.server, dctx, message.method, message.params, connection=connection,
                                     lifespan_state=self._lifespan_state)
            # The result is the runner's wire-ready dict: serialised as is, not re-validated into a model.
            body = to_json({"jsonrpc": "2.0", "id": message.id, "result": result})
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                log.exception("mcp.handler_failed", rpc_method=message.method[:64])
                error = ErrorData(code=INTERNAL_ERROR, message="Internal error")
            body = JSONRPCError(jsonrpc="2.0", id=message.id, error=error).model_dump_json(
                by_alias=True, exclude_unset=True).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*_JSON_HEADERS, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def _admit(self, request: Request, first: Message) -> JSONRPCRequest | None:
        """The request, if this lane answers it; None sends it to the transport."""
        if first["type"] != "http.request" or first.get("more_body", False):
            return None
        has_json, _ = check_accept_headers(request)
        if not has_json or not _exactly_json(request.headers.get("content-type", "")):
            return None
        try:
            message = jsonrpc_message_adapter.validate_python(from_json(first.get("body", b"")), by_name=False)
        except (ValueError, ValidationError):  # ValidationError is a ValueError; named for the reader
            return None
        return message if isinstance(message, JSONRPCRequest) else None


def _exactly_json(content_type: str) -> bool:
    # The transport's own test, stricter than the security settings' (which take any case and
    # any application/json... prefix): anything else gets its 415, from the transport.
    return any(part.strip() == "application/json" for part in content_type.split(";")[0].split(","))


def _replaying(first: Message, receive: Receive) -> Receive:
    """``receive`` that hands ``first`` out again once, then defers to the server."""
    pending = [first]

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay
