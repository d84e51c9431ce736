"""One decision per ``POST /mcp``: what the request is, who sends it, and who answers it.

Made once, before any path is chosen, and handed down (``current()``):

- the body, read once up to the limit (past it: 413, before anything else looks at it) and decoded
  once;
- whether the SDK's transport would run it as one plain exchange: one JSON-RPC request, past the
  transport's Host/Origin check, its Accept and content-type rules and, on 2026-07-28, its validation
  ladder and the ``Mcp-Param`` headers against the tool's schema (the SDK's own public pieces, in
  the transport's order);
- the JSON-RPC method, the tool, the caller (the verified token, the client address), what the
  tool's schemes ask of the caller and whether the token has it (checked here, once: the registry's
  wrapper reads the verdict instead of checking again), and the request's ``progressToken``.

It routes the request to the HTTP challenge (a ``tools/call`` the caller may not use, from a client
that is not ChatGPT: ``app.auth.challenge``), to the lane of the speed-up package when one is
installed (a plain exchange), or to the SDK's transport with the body replayed, whose answer,
errors included, is the SDK's own. Everything here runs on stock parts; nothing depends on the lane.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.inbound import (
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    find_invalid_x_mcp_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types import JSONRPCRequest, ProgressToken, jsonrpc_message_adapter
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic_core import from_json
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.auth.schemes import Access

_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")
_PARAM_HEADER_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()  # ASGI header names are lowercase
# Request _meta prefixes ChatGPT sends (webplus/: older clients).
log = structlog.get_logger("app.mcp")
MAX_PROGRESS_TOKEN = 256  # characters
CHATGPT_PREFIXES = ("openai/", "webplus/")
_current: ContextVar[Admission | None] = ContextVar("app_mcp_admission", default=None)


@dataclass(slots=True)
class Admission:
    """What one ``POST /mcp`` is, decided once."""

    request: Request  # the body already read: ``request.receive`` hands it out once, to whichever path answers
    started: float  # perf_counter at arrival
    version: str | None  # the MCP-Protocol-Version header
    token: AccessToken | None  # the verified bearer token, None for an anonymous caller
    client: str | None  # the client address (the trusted-proxy answer)
    # The request, when the SDK's transport would run it as one plain exchange; None: the SDK answers
    # whatever it is (a notification, a batch, a parse error, a ladder rejection...).
    message: JSONRPCRequest | None = None
    envelope: InboundModernRoute | None = None  # 2026-07-28: the ladder's verdict (version, client info)
    tool: str | None = None  # the tool a tools/call names
    access: Access | None = None  # what that tool asks of the caller, and whether the token has it
    progress_token: ProgressToken | None = None
    streams: bool = False  # the client takes a text/event-stream answer
    streamed: bool = False  # and is answered so (it asked for progress)
    chatgpt: bool = False  # the request _meta carries ChatGPT's openai/* keys

    @property
    def plain(self) -> bool:
        return self.message is not None

    @property
    def method(self) -> str | None:
        return self.message.method if self.message is not None else None

    @property
    def wants_progress(self) -> bool:
        """A plain request with a progressToken from a client that reads a streamed answer. A token is
        repeated in every notification: one longer than MAX_PROGRESS_TOKEN gets the JSON answer."""
        token = self.progress_token
        return (token is not None and self.streams and self.message is not None
                and (not isinstance(token, str) or len(token) <= MAX_PROGRESS_TOKEN))

    @property
    def refused(self) -> bool:
        return self.access is not None and self.access.unmet is not None


def current() -> Admission | None:
    """The admission of the request being served (None outside ``POST /mcp``, e.g. in-memory clients)."""
    return _current.get()


class Lane(Protocol):
    """What answers a plain exchange instead of the SDK's transport (the speed-up package's lane)."""

    @property
    def ready(self) -> bool: ...

    def run(self) -> AbstractAsyncContextManager[None]: ...

    async def answer(self, admission: Admission, send: Send) -> None: ...


# (admission, receive, send): the HTTP answer to a refused call (app.auth.challenge), or None to leave
# the refusal to the tool result.
Challenge = Callable[[Admission, Receive, Send], Any]


class McpAdmission:
    """ASGI app for ``POST /mcp`` (and the other methods, which go straight to ``transport``)."""

    def __init__(self, transport: ASGIApp, manager: StreamableHTTPSessionManager, *,
                 access: Callable[[str, AccessToken | None], Access | None],
                 challenge: Challenge | None, max_body_bytes: int, lane: Lane | None = None,
                 streamed: ASGIApp | None = None) -> None:
        self.transport = transport
        self.streamed = streamed
        self.access = access
        self.challenge = challenge
        self.max_body_bytes = max_body_bytes
        self.lane = lane
        self._security = TransportSecurityMiddleware(manager.security_settings)
        self._server = manager.app
        # Tool name -> (its input schema, whether that schema declares no Mcp-Param header): where it declares
        # none, the SDK's check finds nothing to compare whatever the request carries, and is skipped; the
        # verdict holds while the tool keeps that schema.
        self._param_headers: dict[str, tuple[Any, bool]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.transport(scope, receive, send)
            return
        started = time.perf_counter()
        normalise_headers(scope)
        if (body := await self._body(scope, receive, send)) is None:
            return
        message: Message = {"type": "http.request", "body": body, "more_body": False}
        replay = replaying([message], receive)
        request = Request(scope, replay)
        refusal = await self._security.validate_request(request, is_post=True)
        if refusal is not None:  # the transport's first check, with its answer (logged once)
            await refusal(scope, replay, send)
            return
        version = next((v.decode("latin-1") for k, v in scope["headers"] if k == _VERSION_HEADER), None)
        client = scope.get("client")
        admission = Admission(request, started, version, get_access_token(), client[0] if client else None)
        self._decide(admission, body)
        del body, message  # the replay holds the body now, until whichever path answers reads it
        bound = _current.set(admission)
        try:
            if admission.refused and self.challenge is not None:
                if await self.challenge(admission, replay, send):
                    return
            # The token first: most requests carry none, and cost no more than this test.
            if admission.progress_token is not None and self.streamed is not None \
                    and admission.wants_progress:
                # Progress has a wire only in a streamed answer: the SDK's own SSE transport, over
                # the same
                # server (its notifications go out as the tool sends them, then the answer).
                log.info("mcp.progress_streamed", rpc_method=(admission.method or "")[:64],
                         tool=(admission.tool or "")[:128])
                admission.streamed = True
                admission.message = None
                await self.streamed(scope, replay, send)
            elif admission.plain and self.lane is not None and self.lane.ready:
                await self.lane.answer(admission, send)
            else:
                # The SDK reads the body and decodes it itself: what was decoded here would be
                # one more copy of it, held while the SDK serves.
                admission.message = None
                await self.transport(scope, replay, send)
        finally:
            _current.reset(bound)

    async def _body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None once the client has been answered 413 (or has gone)."""
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            await self._too_large(scope, receive, send)
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client left: nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._too_large(scope, receive, send)
                return None
            if chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A JSON-RPC error, as the SDK's other HTTP-level refusals are (its own 413 is plain text); the connection
        # is not kept: the rest of the body is not read.
        error = {"code": -32600, "message": f"Request body too large (limit: {self.max_body_bytes} bytes)"}
        await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=413,
                           headers={"connection": "close"})(scope, receive, send)

    def _decide(self, admission: Admission, body: bytes) -> None:
        """Fill in what the request is, if the SDK's transport would run it as one plain exchange."""
        request, version = admission.request, admission.version
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS \
                and version not in MODERN_PROTOCOL_VERSIONS:
            return  # an unknown version: the SDK tells the client which ones it serves
        modern = version in MODERN_PROTOCOL_VERSIONS
        has_json, admission.streams = check_accept_headers(request)
        # The handshake-era transport wants exactly application/json (its 415); the 2026-07-28 entry takes what the
        # security settings took already (an application/json... type, in any case).
        if not has_json or (not modern and not _exactly_json(request.headers.get("content-type", ""))):
            return  # the transport's 406 / 415
        try:
            decoded = from_json(body)
        except ValueError:
            if not modern:
                return  # the transport's parse error
            try:  # the 2026-07-28 entry's own parser, which also reads a BOM, UTF-16/32 and NaN
                decoded = json.loads(body)
            except (ValueError, RecursionError):
                return
        try:
            if modern:  # as its entry tells them apart: an object without "id" is a notification, else a request
                if not isinstance(decoded, dict) or "id" not in decoded:
                    return
                message = JSONRPCRequest.model_validate(decoded)
            else:
                message = jsonrpc_message_adapter.validate_python(decoded, by_name=False)
        except ValueError:  # a ValidationError is one too: the SDK's validation error
            return
        if not isinstance(message, JSONRPCRequest):
            return  # a notification or a posted response: the transport's 202
        if modern:
            if message.method == "subscriptions/listen" or find_duplicated_routing_header(request.headers.items()):
                return
            verdict = classify_inbound_request(decoded, headers=dict(request.headers))
            if isinstance(verdict, InboundLadderRejection) or not self._param_headers_hold(message, request):
                return
            admission.envelope = verdict
        params = message.params or {}
        admission.message = message
        admission.progress_token = progress_token_from_params(message.params)
        meta = params.get("_meta")
        admission.chatgpt = isinstance(meta, Mapping) and _names_chatgpt(meta)
        if message.method == "tools/call" and isinstance(name := params.get("name"), str):
            admission.tool = name
            admission.access = self.access(name, admission.token)

    def _param_headers_hold(self, message: JSONRPCRequest, request: Request) -> bool:
        """Whether a tools/call's ``Mcp-Param-*`` headers agree with the tool's schema (True for any other
        request), as the SDK's 2026-07-28 entry checks them. Only the server's schema lookup is used; without
        one the SDK walks tools/list, so the request is not called plain."""
        params = message.params or {}
        if message.method != "tools/call" or not isinstance(name := params.get("name"), str):
            return True
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            return True
        headers = request.headers
        if not arguments and not any(h.startswith(_PARAM_HEADER_PREFIX) for h in headers.keys()):
            return True
        lookup = self._server.get_tool_input_schema
        if lookup is None:
            return self._server.get_request_handler("tools/list") is None
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


def _names_chatgpt(meta: Mapping[Any, Any]) -> bool:
    return any(isinstance(k, str) and k.startswith(CHATGPT_PREFIXES) for k in meta)


def _exactly_json(content_type: str) -> bool:
    # The transport's own test, stricter than the security settings' (which take any case and
    # any application/json... prefix): anything else gets its 415, from the transport.
    return any(part.strip() == "application/json" for part in content_type.split(";")[0].split(","))


_OWS = (b" ", b"\t")


def normalise_headers(scope: Scope) -> None:
    """What real clients send, in the shape the SDK's transport expects: ChatGPT's tool scanner has posted
    ``application/octet-stream`` (or no type) and ``Accept: */*``, which the SDK answers 415 / 406, though the
    body is JSON-RPC either way. Changed in the scope, so the transport sees what the admission saw."""
    ctype = accept = None
    padded = False
    for key, value in scope["headers"]:  # the first of each, as Starlette's Headers.get reads it
        if value[:1] in _OWS or value[-1:] in _OWS:
            padded = True
        if key == b"content-type" and ctype is None:
            ctype = value
        elif key == b"accept" and accept is None:
            accept = value
    updates: dict[bytes, bytes] = {}
    if (ctype or b"").split(b";")[0].strip().lower() in (b"", b"application/octet-stream", b"text/plain"):
        updates[b"content-type"] = b"application/json"
    accepted = (accept or b"").strip()
    if accepted in (b"", b"*/*") or (b"application/json" not in accepted and b"*/*" in accepted):
        updates[b"accept"] = b"application/json, text/event-stream"
    if padded:
        # RFC 9110 §5.5: a field value's leading and trailing whitespace is not part of it.
        # uvicorn's
        # parsers strip it already; an ASGI server or a proxy that does not would have the SDK
        # refuse a
        # tools/call whose `Mcp-Name: get_zoo_animals ` is right (docs/chatgpt-contract.md §2).
        scope["headers"] = [(k, v.strip(b" \t")) for k, v in scope["headers"]]
    if updates:
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k not in updates] + list(updates.items())


def replaying(messages: Iterable[Message], receive: Receive) -> Receive:
    """``receive`` that hands out ``messages`` first, once each, then defers to the server's."""
    pending = list(reversed(list(messages)))

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay
