"""The single-exchange lane: a plain JSON-RPC exchange answered in the ASGI task, with the SDK's own pieces.

A request on the handshake-era paths (2025-06-18, 2025-11-25, no version header) gets from the SDK
transport, per request, a transport, a task group, a dispatcher loop and memory streams, all torn
down once its one answer is written; in stateless JSON mode none of that carries anything. A
2026-07-28 request is answered in the ASGI task by the SDK already, but its answer is built as a
model, dumped to a dict, then encoded by the standard library. This lane hands either to the SDK's
own single-exchange driver (``mcp.server.runner.serve_one``) on the born-ready ``Connection`` the
transport would build, so the SDK's validation, middleware chain (ours included) and result
serialisation run exactly as before; only the plumbing around them is skipped, and the answer (the
runner's wire-ready result in its message model) is encoded once, by pydantic-core.

What the lane answers the request's admission decides (``app.mcp.admission``): a request the SDK's
transport would run as one plain exchange, with the transport's own checks (body limit, Host/Origin,
Accept, content type; on 2026-07-28 its validation ladder and the ``Mcp-Param-*`` headers), already
parsed. Everything else goes to the transport, so every error answer on /mcp is still the SDK's own.

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
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
    ProgressToken,
    RequestId,
)
from pydantic_core import PydanticSerializationError
from starlette.types import Send

from app.mcp.admission import Admission

log = structlog.get_logger("app.mcp")

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
    """Answers the plain exchanges of ``POST /mcp`` (``app.mcp.admission``) in front of the SDK's stateless
    JSON transport, whose server it runs. What is plain, and everything else, the admission decides: the
    lane only answers what it is handed, already parsed."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        if not (manager.stateless and manager.json_response):
            raise ValueError("the single-exchange lane serves a stateless, JSON-response transport only")
        if manager.app.lifespan is not sdk_default_lifespan:
            # The SDK transport enters the server lifespan on its own and keeps the state private,
            # so the two paths would each hold one. Resources belong to the composition root.
            raise ValueError("the single-exchange lane needs an MCP server without a lifespan "
                             "(open shared resources in the composition root instead)")
        self.server: Server[Any] = manager.app
        self._lifespan_state: Any = None

    @property
    def ready(self) -> bool:
        return self._lifespan_state is not None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self.server.lifespan(self.server) as state:
            self._lifespan_state = state
            try:
                yield
            finally:
                self._lifespan_state = None

    async def answer(self, admission: Admission, send: Send) -> None:
        message, request = admission.message, admission.request
        assert message is not None, "the admission hands the lane plain exchanges only"
        envelope = admission.envelope
        if envelope is None:  # a handshake-era request
            # Born ready and without a back-channel: what the stateless transport builds per request.
            connection = Connection.from_envelope(admission.version or DEFAULT_NEGOTIATED_VERSION, None, None)
            dctx = ExchangeContext(request_id=message.id, progress_token=admission.progress_token,
                                   message_metadata=ServerMessageMetadata(request_context=request,
                                                                          can_send_request=False))
        else:
            connection = Connection.from_envelope(envelope.protocol_version, envelope.client_info,
                                                  envelope.client_capabilities)
            dctx = ExchangeContext(request_id=message.id, progress_token=admission.progress_token,
                                   message_metadata=ServerMessageMetadata(request_context=request),
                                   transport=TransportContext(kind="streamable-http", can_send_request=False,
                                                              headers=request.headers))
        try:
            result = await serve_one(self.server, dctx, message.method, message.params, connection=connection,
                                     lifespan_state=self._lifespan_state)
        except Exception as exc:
            if envelope is not None:
                error = modern_error_data(exc)  # the SDK's own mapping, its log line included
                await _answer_error(message.id, error, ERROR_CODE_HTTP_STATUS.get(error.code, 200), send,
                                    exclude_none=True)
                return
            error = handler_exception_to_error_data(exc)
            if error is None:
                log.exception("mcp.handler_failed", rpc_method=message.method[:64])
                error = ErrorData(code=INTERNAL_ERROR, message="Internal error")
            await _answer_error(message.id, error, 200, send, exclude_none=False)
            return
        await _answer(message.id, result, send, exclude_none=envelope is not None)


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
    unset = not exclude_none
    try:
        body = message.model_dump_json(by_alias=True, exclude_none=exclude_none,
                                       exclude_unset=unset).encode()
    except PydanticSerializationError:
        try:  # what UTF-8 cannot carry (a lone surrogate): escaped, as the 2026-07-28 entry's json.dumps does
            plain = message.model_dump(mode="json", by_alias=True, exclude_none=exclude_none,
                                       exclude_unset=unset)
            body = json.dumps(plain, separators=(",", ":")).encode()
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
