"""The principal seam: resolved once per request, visible to everything below, anonymous by default."""

from __future__ import annotations

import pytest
from starlette.responses import JSONResponse

from app.auth.principal import ANONYMOUS, Principal, PrincipalMiddleware, current_principal

pytestmark = pytest.mark.anyio
SCOPE = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}


async def _call(app):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    await app(dict(SCOPE), receive, send)
    return sent


async def _report_principal(scope, receive, send):
    principal = current_principal()
    await JSONResponse({"subject": principal.subject, "anonymous": principal.is_anonymous})(scope, receive, send)


async def test_without_a_resolver_every_caller_is_anonymous():
    sent = await _call(PrincipalMiddleware(_report_principal))
    assert sent[1]["body"] == b'{"subject":null,"anonymous":true}'


async def test_the_resolved_principal_is_visible_inside_and_reset_after():
    async def resolver(scope):
        return Principal(subject="user-1", scopes=frozenset({"search.read"}))

    sent = await _call(PrincipalMiddleware(_report_principal, resolver))
    assert sent[1]["body"] == b'{"subject":"user-1","anonymous":false}'
    assert current_principal() is ANONYMOUS


async def test_a_resolver_can_answer_instead_of_the_app():
    async def resolver(scope):
        return JSONResponse({"error": "invalid_token"}, status_code=401)

    async def never(scope, receive, send):
        raise AssertionError("the app must not run when the resolver answered")

    sent = await _call(PrincipalMiddleware(never, resolver))
    assert sent[0]["status"] == 401
