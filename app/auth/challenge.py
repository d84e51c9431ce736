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

The SDK's JSON transport always answers 200, so the HTTP answer is given before either protocol path, from
the request's admission (``app.mcp.admission``): the call the SDK would run, the verdict of the tool's schemes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import structlog
from mcp.server.auth.provider import AccessToken
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Send

from app.auth.schemes import Access, challenge, refusal_description

log = structlog.get_logger("app.mcp")  # the tool-call lines' logger, whichever path answered
# (tool, seconds): a refusal answered here, for the operation metrics the SDK path would have recorded.
Observe = Callable[[str, float], None]


class Refused(Protocol):
    """What the challenge reads of a request's admission (``app.mcp.admission.Admission``)."""

    request: Request
    access: Access | None
    token: AccessToken | None
    chatgpt: bool
    version: str | None
    started: float


class HttpChallenge:
    """Answers a refused call at HTTP level for the clients ``mode`` says (``auto`` or ``http``)."""

    def __init__(self, resource_metadata_url: str, mode: str, observe: Observe | None = None) -> None:
        if mode not in ("auto", "http"):
            raise ValueError(f"mode: 'auto' or 'http' (with 'meta' there is no HTTP challenge), not {mode!r}")
        self.resource_metadata_url = resource_metadata_url
        self.mode = mode
        self.observe = observe

    async def __call__(self, admission: Refused, receive: Receive, send: Send) -> bool:
        """Answer ``admission``'s refused call and return True, or False to leave it to the tool result."""
        access, token = admission.access, admission.token
        if access is None or access.unmet is None or (self.mode == "auto" and admission.chatgpt):
            return False
        scopes = access.unmet
        if token is None:
            status, header = 401, challenge(self.resource_metadata_url, scopes, None, error=None)
            description = refusal_description(access.title, scopes, signed_in=False)
        else:
            description = refusal_description(access.title, scopes, signed_in=True)
            status, header = 403, challenge(self.resource_metadata_url, scopes, description)
        response = JSONResponse({"error": "insufficient_scope" if token is not None else "unauthorized",
                                 "error_description": description}, status_code=status,
                                headers={"www-authenticate": header})
        await response(admission.request.scope, receive, send)
        elapsed = time.perf_counter() - admission.started
        # The line the SDK path writes for a refused call (app/mcp/middleware.py), with how it was answered.
        who = {"client_id": token.client_id, "subject": token.subject} if token is not None else {}
        log.info("mcp.tool_call", rpc_method="tools/call", tool=access.tool, outcome="auth_required",
                 answered="http", status=status, duration_ms=round(elapsed * 1000, 2),
                 protocol_version=admission.version, **who)
        if self.observe is not None:
            self.observe(access.tool, elapsed)
        return True
