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

from collections.abc import Callable
from typing import Any

import structlog
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from pydantic_core import from_json
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.auth.schemes import challenge

log = structlog.get_logger(__name__)
RefusedScopes = Callable[[object, AccessToken | None], tuple[str, tuple[str, ...]] | None]


def is_chatgpt(params: dict[str, Any]) -> bool:
    meta = params.get("_meta")
    return isinstance(meta, dict) and any(isinstance(k, str) and k.startswith("openai/") for k in meta)


class ChallengeGate:
    def __init__(self, app: ASGIApp, *, refused: RefusedScopes, resource_metadata_url: str, mode: str,
                 max_body_bytes: int) -> None:
        self.app = app
        self.refused = refused
        self.resource_metadata_url = resource_metadata_url
        self.mode = mode
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.mode not in ("auto", "http"):
            await self.app(scope, receive, send)
            return
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
            answer = self.answer(body)
            if answer is not None:
                status, header, description, tool = answer
                # The tool is one of ours (only a known tool is refused): the same outcome the result path logs.
                log.info("mcp.tool_call", tool=tool, outcome="auth_required", answered="http", status=status)
                response = JSONResponse({"error": "insufficient_scope" if status == 403 else "unauthorized",
                                         "error_description": description}, status_code=status,
                                        headers={"www-authenticate": header})
                await response(scope, receive, send)
                return
            messages = [{"type": "http.request", "body": body, "more_body": False}]
        await self.app(scope, _replaying(messages, receive), send)

    def answer(self, body: bytes) -> tuple[int, str, str, str] | None:
        """(status, WWW-Authenticate, description, tool) when this request gets the HTTP challenge; else None."""
        if b"tools/call" not in body:  # every other request, without parsing it twice
            return None
        try:
            message = from_json(body)
        except ValueError:
            return None
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return None
        params = message.get("params")
        if not isinstance(params, dict) or (self.mode == "auto" and is_chatgpt(params)):
            return None
        token = get_access_token()
        refused = self.refused(params.get("name"), token)
        if refused is None:
            return None
        title, scopes = refused
        name = str(params.get("name"))
        if token is None:
            return (401, challenge(self.resource_metadata_url, scopes, None, error=None), f"Sign in to use {title}.",
                    name)
        description = f"{title} needs more access to the linked account ({' '.join(scopes)})."
        return 403, challenge(self.resource_metadata_url, scopes, description), description, name


def _replaying(messages: list[Message], receive: Receive) -> Receive:
    pending = list(reversed(messages))

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay
