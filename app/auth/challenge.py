"""How a ``tools/call`` the caller may not use is answered: ChatGPT's way, or the MCP authorization spec's.

ChatGPT starts account linking from the tool result: ``isError`` with ``_meta["mcp/www_authenticate"]`` (the
registry's refusal), HTTP 200. Every other MCP client (the SDK's ``OAuthClientProvider``, MCP Inspector) starts
its OAuth flow on HTTP 401 and steps up on 403 ``insufficient_scope``, as the MCP authorization spec says, and
never looks inside a 200. So, per request:

- ``auto`` (the default): a request whose ``_meta`` carries ChatGPT's ``openai/*`` keys gets the tool result;
  any other gets HTTP 401 when it sent no token (``WWW-Authenticate: Bearer resource_metadata=..., scope=...``
  and no error code: RFC 6750 §3.1 keeps error codes for requests that sent a token), 403
  ``error="insufficient_scope"`` when its token lacks a scope;
- ``meta``: the tool result for everyone; ``http``: the HTTP answer for everyone.

The SDK's JSON transport always answers 200, so the decision is made here, at HTTP level, after the bearer
check (the token is in the SDK's auth context) and before the single-exchange lane and the SDK transport (both
protocol paths), from the registry's own check of the tool's schemes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from pydantic_core import from_json
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.auth.schemes import challenge, refusal_description

log = structlog.get_logger("app.mcp")  # the tool-call lines' logger, whichever path answered
RefusedScopes = Callable[[object, AccessToken | None], tuple[str, tuple[str, ...]] | None]
# (tool, seconds): a refusal answered here, for the operation metrics the SDK path would have recorded.
Observe = Callable[[str, float], None]
# Request _meta prefixes ChatGPT sends (webplus/: older clients).
CHATGPT_PREFIXES = ("openai/", "webplus/")
MODERN = "2026-07-28"


def is_chatgpt(params: dict[str, Any]) -> bool:
    meta = params.get("_meta")
    return isinstance(meta, dict) and any(isinstance(k, str) and k.startswith(CHATGPT_PREFIXES) for k in meta)


class ChallengeGate:
    def __init__(self, app: ASGIApp, *, refused: RefusedScopes, resource_metadata_url: str, mode: str,
                 max_body_bytes: int, security: TransportSecuritySettings | None = None,
                 observe: Observe | None = None) -> None:
        if mode not in ("auto", "http"):
            raise ValueError(f"mode: 'auto' or 'http' (with 'meta' there is no gate), not {mode!r}")
        self.app = app
        self.refused = refused
        self.resource_metadata_url = resource_metadata_url
        self.mode = mode
        self.max_body_bytes = max_body_bytes
        self.security = TransportSecurityMiddleware(security) if security is not None else None
        self.observe = observe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self._declared_too_large(scope):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        messages: list[Message] = []
        size = 0
        while True:  # the body, up to the limit the transport enforces below (past it: its answer, not ours)
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_body_bytes or not message.get("more_body", False):
                break
        last = messages[-1]
        if last["type"] == "http.request" and not last.get("more_body", False) and size <= self.max_body_bytes:
            body = b"".join(m.get("body", b"") for m in messages)
            messages = [{"type": "http.request", "body": body, "more_body": False}]
            answer = self.answer(body)
            if answer is not None and await self._the_sdk_would_serve(scope, answer):
                await self._challenge(scope, receive, send, answer, time.perf_counter() - started)
                return
        await self.app(scope, _replaying(messages, receive), send)

    def _declared_too_large(self, scope: Scope) -> bool:
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        return length is not None and length.isdigit() and int(length) > self.max_body_bytes

    def answer(self, body: bytes) -> Refusal | None:
        """The refusal this request gets at HTTP level, if it is a well-formed tools/call the registry refuses
        from a client this mode answers so; else None (the SDK answers, refusals included, in the result)."""
        if b"tools" not in body:  # every other request, unparsed (an escaped "tools\/call" still is one)
            return None
        try:
            message = from_json(body)
        except ValueError:
            return None
        if (not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call"
                or isinstance(message.get("id"), bool) or not isinstance(message.get("id"), str | int)):
            return None  # not a request the SDK would run (a notification, a malformed id): its answer
        params = message.get("params")
        if not isinstance(params, dict) or (self.mode == "auto" and is_chatgpt(params)):
            return None
        token = get_access_token()
        refused = self.refused(params.get("name"), token)
        if refused is None:
            return None
        title, scopes = refused
        return Refusal(str(params["name"]), title, scopes, token, params)

    async def _the_sdk_would_serve(self, scope: Scope, refusal: Refusal) -> bool:
        """Whether the transport would have run this call (and refused it in the result): its Host/Origin, Accept
        and content-type checks, and on 2026-07-28 the headers that must repeat the body. Otherwise its answer."""
        request = Request(scope)
        if self.security is not None and await self.security.validate_request(request, is_post=True) is not None:
            return False
        has_json, _ = check_accept_headers(request)
        ctype = request.headers.get("content-type", "").split(";")[0].strip()
        if not has_json or ctype != "application/json":
            return False
        if request.headers.get("mcp-protocol-version") == MODERN:
            meta = refusal.params.get("_meta")
            return (request.headers.get("mcp-method") == "tools/call"
                    and request.headers.get("mcp-name") == refusal.tool
                    and isinstance(meta, dict) and meta.get("io.modelcontextprotocol/protocolVersion") == MODERN)
        return True

    async def _challenge(self, scope: Scope, receive: Receive, send: Send, refusal: Refusal, elapsed: float
                         ) -> None:
        token, scopes = refusal.token, refusal.scopes
        if token is None:
            status, header = 401, challenge(self.resource_metadata_url, scopes, None, error=None)
            description = refusal_description(refusal.title, scopes, signed_in=False)
        else:
            description = refusal_description(refusal.title, scopes, signed_in=True)
            status, header = 403, challenge(self.resource_metadata_url, scopes, description)
        response = JSONResponse({"error": "insufficient_scope" if token is not None else "unauthorized",
                                 "error_description": description}, status_code=status,
                                headers={"www-authenticate": header})
        await response(scope, receive, send)
        # The line the SDK path writes for a refused call (app/mcp/middleware.py), with how it was answered.
        who = {"client_id": token.client_id, "subject": token.subject} if token is not None else {}
        log.info("mcp.tool_call", rpc_method="tools/call", tool=refusal.tool, outcome="auth_required",
                 answered="http", status=status, duration_ms=round(elapsed * 1000, 2),
                 protocol_version=next((v.decode("latin-1") for k, v in scope["headers"]
                                        if k == b"mcp-protocol-version"), None), **who)
        if self.observe is not None:
            self.observe(refusal.tool, elapsed)


@dataclass(frozen=True)
class Refusal:
    tool: str
    title: str
    scopes: tuple[str, ...]
    token: AccessToken | None
    params: dict[str, Any]


def _replaying(messages: list[Message], receive: Receive) -> Receive:
    pending = list(reversed(messages))

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay
