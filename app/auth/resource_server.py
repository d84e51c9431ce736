"""Bearer tokens on /mcp, on the SDK's own pieces, with authentication OPTIONAL.

The SDK's ``BearerAuthBackend`` verifies the token (expiry and audience included) and
``AuthContextMiddleware`` puts it where ``get_access_token()`` reads it. Its
``RequireAuthMiddleware`` is deliberately left out: ``initialize``, ``tools/list`` and
``noauth`` tools must work without a token, and each tool enforces its own schemes
(``app.mcp.registry``). One thing the SDK backend does not do: it treats a token it
rejects as anonymous. A client that sent a token expects to be told it is bad, so a
rejected token gets HTTP 401 ``invalid_token`` here.
"""

from __future__ import annotations

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import TokenVerifier
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials, AuthenticationError
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from app.auth.schemes import challenge
from app.db import DatabaseNotMigrated, DatabaseUnavailable
from app.errors import ToolFailure
from app.wording import Wording

say = Wording(__file__)
INVALID_TOKEN = "The access token is invalid, expired, or was issued for another resource."


class VerifierUnavailable(AuthenticationError):
    """The token could not be checked (its revocation state lives in an unreachable database):
    503 and retry, not 401, which would make the client throw a good token away."""


class OptionalBearerBackend(BearerAuthBackend):
    """No ``Authorization: Bearer`` header: anonymous. A header the SDK backend rejects: 401."""

    async def authenticate(self, conn: HTTPConnection
                           ) -> tuple[AuthCredentials, AuthenticatedUser] | None:
        try:
            result = await super().authenticate(conn)
        except (DatabaseUnavailable, DatabaseNotMigrated) as exc:
            raise VerifierUnavailable(str(exc)) from exc
        if result is None and conn.headers.get("authorization", "").lower().startswith("bearer "):
            raise AuthenticationError(INVALID_TOKEN)
        return result


def bearer_auth(app: ASGIApp, verifier: TokenVerifier, *, resource: str, resource_metadata_url: str) -> ASGIApp:
    """Wrap ``app`` so requests carry the verified token (or none) in the SDK's auth context."""

    def invalid_token(_: HTTPConnection, exc: AuthenticationError) -> Response:
        if isinstance(exc, VerifierUnavailable):
            return JSONResponse({"error": "temporarily_unavailable", "error_description": str(exc)},
                                status_code=503, headers={"retry-after": "5"})
        description = str(exc) or INVALID_TOKEN
        return JSONResponse(
            {"error": "invalid_token", "error_description": description},
            status_code=401,
            headers={"www-authenticate": challenge(resource_metadata_url, (), description, error="invalid_token")},
        )

    backend = OptionalBearerBackend(verifier, resource_server_url=AnyHttpUrl(resource))
    return AuthenticationMiddleware(AuthContextMiddleware(app), backend=backend, on_error=invalid_token)


def current_subject(scope: str) -> str | None:
    """The account behind the current request's token, if that token carries ``scope``."""
    token = get_access_token()
    if token is None or scope not in token.scopes:
        return None
    return token.subject


def signed_in() -> str | None:
    """The account behind the current request's token, whatever its scopes (None: anonymous)."""
    token = get_access_token()
    return token.subject if token is not None and token.subject else None


def linked_account(what: str) -> str:
    """The caller's account, for a tool whose schemes the registry has already enforced; ``what`` names what
    needs it in the error a token without a subject gets."""
    token = get_access_token()
    if token is None or not token.subject:
        raise ToolFailure(say("{what} needs a linked account.", what=what),
                          "Ask the user to connect (sign in to) this app, then try again.")
    return token.subject


def protected_resource_routes(resource: str, metadata_url: str, issuer: str, scopes: list[str],
                              resource_name: str) -> list[BaseRoute]:
    """RFC 9728 metadata of /mcp, at the path-suffixed URL the challenges name AND at the root.

    Written here rather than with the SDK's helper: its URL type appends a slash to a bare
    origin, and ChatGPT needs ``authorization_servers`` to equal the issuer byte for byte.
    """
    document = {"resource": resource, "authorization_servers": [issuer], "scopes_supported": scopes,
                "bearer_methods_supported": ["header"], "resource_name": resource_name}
    headers = {"cache-control": "public, max-age=300", "access-control-allow-origin": "*"}

    async def metadata(_: Request) -> Response:
        return JSONResponse(document, headers=headers)

    path = "/.well-known/oauth-protected-resource"
    suffixed = metadata_url.split("://", 1)[-1].partition("/")[2]
    return [Route(path, metadata, methods=["GET"]), Route(f"/{suffixed}", metadata, methods=["GET"])]
