"""The single-exchange lane: a stateless JSON request answered in the ASGI task, with the SDK's own pieces.

A request on the handshake-era paths (2025-06-18, 2025-11-25, no version header) gets from the SDK
transport, per request, a transport, a task group, a dispatcher loop and memory streams, all torn
down once its one answer is written; in stateless JSON mode none of that carries anything. A
2026-07-28 request is answered in the ASGI task by the SDK already, but its answer is built as a
model, dumped to a dict, then encoded by the standard library. This lane hands either to the SDK's
own single-exchange driver (``mcp.server.runner.serve_one``) on the born-ready ``Connection`` the
transport would build, so the SDK's validation, middleware chain (ours included) and result
serialisation run exactly as before; only the plumbing around them is skipped, and the answer (the
runner's wire-ready result in its message model) is encoded once, by pydantic-core.

The transport's checks run first, in its order, from its own objects: the body limit, the Host/Origin
check, Accept and content type; on 2026-07-28 also its validation ladder (``classify_inbound_request``:
the envelope, the routing headers that must repeat the body) and the ``Mcp-Param-*`` headers against
the tool's schema. Everything it would not serve as one plain exchange goes to the SDK transport
untouched, body replayed: notifications, responses, batches, anything that does not parse or
validate, a ladder rejection, ``subscriptions/listen``, an unknown version header, a client that does
not accept JSON, a request the transport security settings refuse. So every error answer on /mcp is
still the SDK's own, but one: a well-formed tools/call the caller may not use, from a client that is
not ChatGPT, is answered HTTP 401/403 before it gets here (``app.auth.challenge``).

Three differences from the handshake-era transport, all deliberate (the 2026-07-28 entry already
behaves so, and the lane keeps its mapping, statuses included):
- a handler exception that is neither an ``MCPError`` nor a validation error is
  answered ``-32603 Internal error`` and logged; the dispatcher would put ``code 0``
  and the exception's text on the wire;
- notifications a handler emits mid-request (progress, log messages) are dropped, as
  they are by the transport in JSON-response mode, where the body holds only the answer;
- a string UTF-8 cannot carry (a lone surrogate) in an answer is sent escaped, as the 2026-07-28
  entry sends it; the handshake-era transport fails the request with HTTP 500.

On both paths, an answer no JSON can hold (a handler left an object in it) is ``-32603 Internal
error``, logged, where either SDK entry fails the request with HTTP 500.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.lowlevel.server import lifespan as sdk_default_lifespan
from mcp.server.runner import modern_error_data, serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    find_invalid_x_mcp_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data, progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    ProgressToken,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, from_json
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = structlog.get_logger("app.mcp")

_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")
_JSON_HEADERS = [(b"content-type", b"application/json")]
_PARAM_HEADER_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()  # ASGI header names are lowercase
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
        self._limited_modern = RequestBodyLimitMiddleware(self._serve_modern, manager.max_request_body_size)
        self._lifespan_state: Any = None
        # Tool name -> (its input schema, whether that schema declares no Mcp-Param header): where it declares none,
        # the SDK's check finds nothing to compare whatever the request carries, and is skipped; the verdict holds
        # while the tool keeps that schema.
        self._param_headers: dict[str, tuple[Any, bool]] = {}

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
        # The transport's body limit, in the transport's order: before anything looks at the body.
        if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
            await self._limited(scope, receive, send)
        elif version in MODERN_PROTOCOL_VERSIONS:
            await self._limited_modern(scope, receive, send)
        else:  # unknown: the SDK's modern entry tells the client which versions it serves
            await self.fallback(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        admitted = await self._admit(scope, receive, send)
        if admitted is None:
            return
        request, message, _ = admitted
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER) or DEFAULT_NEGOTIATED_VERSION
        # Born ready and without a back-channel: what the stateless transport builds per request.
        connection = Connection.from_envelope(version, None, None)
        dctx = ExchangeContext(request_id=message.id,
                               message_metadata=ServerMessageMetadata(request_context=request, can_send_request=False),
                               progress_token=progress_token_from_params(message.params))
        try:
            result = await serve_one(self.server, dctx, message.method, message.params, connection=connection,
                                     lifespan_state=self._lifespan_state)
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                log.exception("mcp.handler_failed", rpc_method=message.method[:64])
                error = ErrorData(code=INTERNAL_ERROR, message="Internal error")
            await _answer_error(message.id, error, 200, send, exclude_none=False)
            return
        await _answer(message.id, result, send, exclude_none=False)

    async def _serve_modern(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A 2026-07-28 request, the way the SDK's modern entry serves it in JSON-response mode; anything its
        ladder would reject (a missing envelope, a header that disagrees with the body, an Mcp-Param header
        that breaks the tool's schema, a duplicated routing header) goes to the SDK for its own answer."""
        admitted = await self._admit(scope, receive, send)
        if admitted is None:
            return
        request, message, decoded = admitted
        replay = request.receive
        if message.method == "subscriptions/listen" or find_duplicated_routing_header(request.headers.items()):
            await self.fallback(scope, replay, send)
            return
        verdict = classify_inbound_request(decoded, headers=dict(request.headers))
        if isinstance(verdict, InboundLadderRejection) or not self._params_headers_hold(message, request.headers):
            await self.fallback(scope, replay, send)
            return
        connection = Connection.from_envelope(verdict.protocol_version, verdict.client_info,
                                              verdict.client_capabilities)
        dctx = ExchangeContext(request_id=message.id, message_metadata=ServerMessageMetadata(request_context=request),
                               progress_token=progress_token_from_params(message.params),
                               transport=TransportContext(kind="streamable-http", can_send_request=False,
                                                          headers=request.headers))
        try:
            result = await serve_one(self.server, dctx, message.method, message.params, connection=connection,
                                     lifespan_state=self._lifespan_state)
        except Exception as exc:
            error = modern_error_data(exc)  # the SDK's own mapping, its log line included
            await _answer_error(message.id, error, ERROR_CODE_HTTP_STATUS.get(error.code, 200), send, exclude_none=True)
            return
        await _answer(message.id, result, send, exclude_none=True)

    def _params_headers_hold(self, message: JSONRPCRequest, headers: Headers) -> bool:
        """Whether a tools/call's ``Mcp-Param-*`` headers agree with the tool's schema (True for any other
        request). Only the server's schema lookup is used; without one the SDK walks tools/list, so the
        request goes to it."""
        params = message.params or {}
        if message.method != "tools/call" or not isinstance(name := params.get("name"), str):
            return True
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            return True
        if not arguments and not any(h.startswith(_PARAM_HEADER_PREFIX) for h in headers.keys()):
            return True
        lookup = self.server.get_tool_input_schema
        if lookup is None:
            return self.server.get_request_handler("tools/list") is None
        try:
            schema = lookup(name)
        except Exception:  # the SDK fails open here too, loudly; it can say so itself
            return False
        if schema is None:
            return True
        known = self._param_headers.get(name)
        if known is None or known[0] is not schema:
            known = self._param_headers[name] = (
                schema, find_invalid_x_mcp_header(schema) is not None or not x_mcp_header_map(schema))
        if known[1]:
            return True
        # The headers as they came, repeats included: a repeated Mcp-Param header is a rejection of its own.
        return validate_mcp_param_headers(schema, arguments or {}, headers) is None

    async def _admit(self, scope: Scope, receive: Receive, send: Send
                     ) -> tuple[Request, JSONRPCRequest, dict[str, Any]] | None:
        """The request (its body replayable), if this lane may answer it; else the security refusal or the
        transport has answered, and None."""
        first = await receive()  # the limit middleware hands over the whole body as one message
        replay = _replaying(first, receive)
        request = Request(scope, replay)
        refusal = await self._security.validate_request(request, is_post=True)
        if refusal is not None:  # the transport's first check, with the transport's answer (logged once)
            await refusal(scope, replay, send)
            return None
        admitted = self._parse(request, first)
        if admitted is None:
            await self.fallback(scope, replay, send)
            return None
        return request, *admitted

    def _parse(self, request: Request, first: Message) -> tuple[JSONRPCRequest, dict[str, Any]] | None:
        if first["type"] != "http.request" or first.get("more_body", False):
            return None
        has_json, _ = check_accept_headers(request)
        if not has_json or not _exactly_json(request.headers.get("content-type", "")):
            return None
        try:
            decoded = from_json(first.get("body", b""))
            message = jsonrpc_message_adapter.validate_python(decoded, by_name=False)
        except (ValueError, ValidationError):  # ValidationError is a ValueError; named for the reader
            return None
        return (message, decoded) if isinstance(message, JSONRPCRequest) else None


async def _answer(request_id: RequestId, result: dict[str, Any], send: Send, *, exclude_none: bool) -> None:
    await _send_message(JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result), 200, send,
                        exclude_none=exclude_none)


async def _answer_error(request_id: RequestId, error: ErrorData, status: int, send: Send, *, exclude_none: bool
                        ) -> None:
    await _send_message(JSONRPCError(jsonrpc="2.0", id=request_id, error=error), status, send,
                        exclude_none=exclude_none)


async def _send_message(message: JSONRPCResponse | JSONRPCError, status: int, send: Send, *, exclude_none: bool
                        ) -> None:
    """Each transport's own rendering, encoded once in Rust: the handshake-era one drops what was never set
    (``exclude_unset``), the 2026-07-28 one every null (``exclude_none``); NaN and infinities are null in both."""
    dump = {"exclude_none": True} if exclude_none else {"exclude_unset": True}
    try:
        body = message.model_dump_json(by_alias=True, **dump).encode()
    except PydanticSerializationError:
        try:  # what UTF-8 cannot carry (a lone surrogate): escaped, as the 2026-07-28 entry's json.dumps does
            body = json.dumps(message.model_dump(mode="json", by_alias=True, **dump), separators=(",", ":")).encode()
        except (PydanticSerializationError, TypeError, ValueError):  # a handler left something no JSON can hold
            log.exception("mcp.unserialisable_answer")
            status = 200
            failed = JSONRPCError(jsonrpc="2.0", id=message.id,
                                  error=ErrorData(code=INTERNAL_ERROR, message="Internal error"))
            body = failed.model_dump_json(by_alias=True, exclude_none=True).encode()
    await _respond(status, body, send)


async def _respond(status: int, body: bytes, send: Send) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*_JSON_HEADERS, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


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
