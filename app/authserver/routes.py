"""HTTP endpoints of the built-in authorization server (Starlette), around
``app.authserver.server``, and ``authorization_server_routes``, which composes them with the
browser's pages (``signin.py``, ``account.py``, ``federation.py``).

Each JSON endpoint reads its (small, capped) body on the event loop, resolves the client's
metadata document or keys if needed (network, guarded), then hands the request to
authlib in a worker thread with one unit of work (``transactions.py``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from authlib.oauth2.rfc6749.util import extract_basic_authorization
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.authserver import pages
from app.authserver.account import AccountPages
from app.authserver.clients import (
    AUTH_METHODS,
    MAX_REGISTRATION_BYTES,
    CimdResolver,
    Client,
    ClientKeys,
    ClientMetadataError,
    ClientRepository,
    register_client,
    registration_response,
    validate_metadata,
)
from app.authserver.federation import UpstreamSignIn
from app.authserver.forms import (
    CORS,
    NO_STORE,
    BodyTooLarge,
    MalformedRequest,
    Signer,
    basic_credentials_ok,
    oauth_error,
    parse_form,
    parse_json,
    read_body,
    storable,
)
from app.authserver.pages import Pages
from app.authserver.protocol import ASSERTION_ALGORITHMS, SECRET_AUTH, ServerConfig, reply
from app.authserver.signin import (
    PasswordSignIn,
    ProviderLinks,
    SignInCounter,
    SignInLimits,
    SignInPages,
)
from app.authserver.transactions import Transactions
from app.authserver.upstream import UpstreamProvider
from app.db import Database, DatabaseNotMigrated, DatabaseUnavailable, UnitOfWork
from app.limits import Check, Limits, OverLimit, Rate, address_key, network_key
from app.observability.metrics import Metrics

log = structlog.get_logger(__name__)
# RFC 6749 section 5.2's error codes (and RFC 8707's, and the 503 of an outage): a token request's
# outcome label is one of these, "issued" or "error", never a string of the client's.
OAUTH_TOKEN_ERRORS = frozenset({"invalid_request", "invalid_client", "invalid_grant",
                                "unauthorized_client", "unsupported_grant_type", "invalid_scope",
                                "invalid_target", "temporarily_unavailable"})


@dataclass(frozen=True)
class RegistrationLimits:
    """``POST /register``: per client address (ChatGPT's users register from OpenAI's few addresses:
    sized for that), per network (``network_key``: so that a handful of addresses cannot take the
    total between them), and all addresses together."""

    per_address: Rate
    per_network: Rate
    total: Rate


def _nothing_kept(uow: UnitOfWork, subject: str) -> int:
    """No feature keeps anything for an account (the authorization server alone, in tests)."""
    return 0


def authorization_server_routes(*, config: ServerConfig, db: Database, cimd: CimdResolver,
                                client_keys: ClientKeys, signer: Signer, limits: Limits,
                                sign_in: SignInLimits, registration: RegistrationLimits,
                                secure_cookies: bool, jwks: dict[str, Any],
                                metrics: Metrics | None = None, registration_open: bool = True,
                                upstream: Mapping[str, UpstreamProvider] | None = None,
                                password_login: bool = True,
                                forget: Callable[[UnitOfWork, str], int] | None = None
                                ) -> list[BaseRoute]:
    """Every route of the authorization server: its JSON endpoints and its pages, each part given
    what it uses (keyword-only dataclasses, compared by identity: their bound methods are the
    routes' endpoints)."""
    upstream = upstream or {}
    rendered = Pages()
    transactions = Transactions(config=config, db=db)
    count = SignInCounter(metrics)
    links = ProviderLinks(upstream)
    passwords = PasswordSignIn(db=db, signer=signer, limits=limits, rates=sign_in, count=count,
                               secure_cookies=secure_cookies)
    authorize = SignInPages(config=config, cimd=cimd, signer=signer, pages=rendered,
                            transactions=transactions, passwords=passwords, providers=links,
                            count=count, secure_cookies=secure_cookies,
                            password_login=password_login)
    account = AccountPages(config=config, db=db, signer=signer, pages=rendered, passwords=passwords,
                           providers=links, secure_cookies=secure_cookies,
                           password_login=password_login, forget=forget or _nothing_kept)
    federation = UpstreamSignIn(db=db, signer=signer, pages=rendered, upstream=upstream,
                                authorize=authorize, account=account, count=count,
                                secure_cookies=secure_cookies)
    endpoints = OAuthEndpoints(config=config, db=db, cimd=cimd, client_keys=client_keys,
                               limits=limits, registration=registration, jwks=jwks,
                               transactions=transactions, metrics=metrics,
                               registration_open=registration_open)
    return [*endpoints.routes(), *authorize.routes(), *federation.routes(), *account.routes()]


@dataclass(frozen=True, kw_only=True, eq=False)
class OAuthEndpoints:
    """The JSON side: metadata, JWKS, /token, /revoke, /introspect, /register."""

    config: ServerConfig
    db: Database
    cimd: CimdResolver
    client_keys: ClientKeys
    limits: Limits
    registration: RegistrationLimits
    jwks: dict[str, Any]
    transactions: Transactions
    metrics: Metrics | None = None
    registration_open: bool = True

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/.well-known/oauth-authorization-server", self.metadata,
                  methods=["GET", "OPTIONS"]),
            Route("/jwks.json", self.jwks_document, methods=["GET", "OPTIONS"]),
            Route("/token", self.grants_counted(self.guarded(self.token)),
                  methods=["POST", "OPTIONS"]),
            Route("/revoke", self.guarded(self.revoke), methods=["POST", "OPTIONS"]),
            Route("/introspect", self.guarded(self.introspect), methods=["POST", "OPTIONS"]),
            *([Route("/register", self.guarded(self.register), methods=["POST", "OPTIONS"])]
              if self.registration_open else []),
        ]

    # --- documents --------------------------------------------------------------------------------
    def metadata_document(self) -> dict[str, Any]:
        issuer = self.config.issuer
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            **({"registration_endpoint": f"{issuer}/register"} if self.registration_open else {}),
            "revocation_endpoint": f"{issuer}/revoke",
            "introspection_endpoint": f"{issuer}/introspect",
            "jwks_uri": f"{issuer}/jwks.json",
            "scopes_supported": self.config.catalog.names,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "token_endpoint_auth_signing_alg_values_supported": ASSERTION_ALGORITHMS,
            "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "introspection_endpoint_auth_methods_supported": SECRET_AUTH,
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
            "ui_locales_supported": list(pages.LANGUAGES),
        }

    async def metadata(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=CORS)
        return JSONResponse(self.metadata_document(),
                            headers={"cache-control": "public, max-age=300", **CORS})

    async def jwks_document(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=CORS)
        return JSONResponse(self.jwks, headers={"cache-control": "public, max-age=300", **CORS})

    # --- machinery --------------------------------------------------------------------------------
    def guarded(self, endpoint: Callable[[Request], Awaitable[Response]]
                ) -> Callable[[Request], Awaitable[Response]]:
        """JSON endpoints: CORS preflight, body cap, and infrastructure failures as OAuth errors."""

        async def wrapper(request: Request) -> Response:
            if request.method == "OPTIONS":
                return Response(status_code=204, headers=CORS)
            try:
                return await endpoint(request)
            except BodyTooLarge as exc:
                error = ("invalid_client_metadata" if request.url.path == "/register"
                         else "invalid_request")
                return oauth_error(error, str(exc), 413)
            except MalformedRequest as exc:
                error = ("invalid_client_metadata" if request.url.path == "/register"
                         else "invalid_request")
                return oauth_error(error, str(exc))
            except (DatabaseUnavailable, DatabaseNotMigrated):
                return oauth_error("temporarily_unavailable",
                                   "The server cannot reach its database; retry shortly.",
                                   503, {"retry-after": "5"})
            except ClientMetadataError as exc:
                status = 401 if exc.error == "invalid_client" else 400
                return oauth_error(exc.error, str(exc), status)

        return wrapper

    def grants_counted(self, endpoint: Callable[[Request], Awaitable[Response]]
                       ) -> Callable[[Request], Awaitable[Response]]:
        """/token's outcome as answered, the guard's answers (a bad body, an outage) included:
        ``issued``, the OAuth error code, or ``error`` for a failure of the server's own. A request
        cancelled (the client left) is not an outcome."""

        async def wrapper(request: Request) -> Response:
            if request.method == "OPTIONS" or self.metrics is None:
                return await endpoint(request)
            try:
                response = await endpoint(request)
            except Exception:
                self.metrics.token_grant(getattr(request.state, "grant_type", ""), "error")
                raise
            self.metrics.token_grant(getattr(request.state, "grant_type", ""),
                                     _grant_outcome(response))
            return response

        return wrapper

    async def prepare_client(self, request: Request, form: list[tuple[str, str]]) -> KeySet | None:
        """Fetch what authlib will need about the calling client, before the transaction: its
        metadata document (CIMD) and, for private_key_jwt, its public keys."""
        data = dict(form)
        # A dict of the one header authlib reads (by that spelling; Starlette's headers are
        # case-insensitive).
        client_id = data.get("client_id") or extract_basic_authorization(
            {"Authorization": request.headers.get("authorization", "")})[0]
        kid = None
        if assertion := data.get("client_assertion"):
            try:
                extracted = jws.extract_compact(assertion.encode())
                claims = json.loads(extracted.payload)
                client_id = claims.get("sub") if isinstance(claims, dict) else None
                kid = extracted.headers().get("kid")
            except (JoseError, ValueError, UnicodeError, RecursionError, AttributeError):
                return None  # authlib reports the malformed assertion
        if not isinstance(client_id, str) or not client_id or not storable(client_id):
            return None  # no such client: authlib says invalid_client
        if self.cimd.is_document_url(client_id):
            await self.cimd.ensure(client_id)
        if not assertion:
            return None
        client = await self.db.read(
            lambda uow: _client(uow.repository(ClientRepository).get(client_id)))
        # A client with a single key may omit kid (RFC 7523 does not require it): joserfc then uses
        # that key.
        return await self.client_keys.keys(client, kid) if client is not None else None

    # --- /token, /revoke, /introspect, /register --------------------------------------------------
    async def token(self, request: Request) -> Response:
        form = await self.urlencoded(request)
        if isinstance(form, Response):
            return form
        request.state.grant_type = dict(form).get("grant_type", "")  # for grants_counted
        keys = await self.prepare_client(request, form)
        req = self.transactions.form_request(request, form, [])
        answer = await self.transactions.run(
            lambda server: reply(server.create_token_response(req)), client_keys=keys)
        return answer.response()

    async def revoke(self, request: Request) -> Response:
        return await self.endpoint(request, "revocation")

    async def introspect(self, request: Request) -> Response:
        return await self.endpoint(request, "introspection")

    async def endpoint(self, request: Request, name: str) -> Response:
        form = await self.urlencoded(request)
        if isinstance(form, Response):
            return form
        keys = await self.prepare_client(request, form)
        req = self.transactions.form_request(request, form, [])
        answer = await self.transactions.run(
            lambda server: reply(server.create_endpoint_response(name, req)), client_keys=keys)
        return answer.response()

    async def urlencoded(self, request: Request) -> list[tuple[str, str]] | Response:
        if (request.headers.get("content-type", "").split(";")[0].strip().lower()
                != "application/x-www-form-urlencoded"):
            return oauth_error("invalid_request",
                               "Send the parameters as application/x-www-form-urlencoded.")
        if not basic_credentials_ok(request.headers):
            return oauth_error("invalid_client",
                               "The Authorization header's client credentials are not base64 of "
                               "UTF-8 text client_id:client_secret.", 401,
                               {"www-authenticate": 'Basic realm="oauth"'})
        return parse_form(await read_body(request))

    async def register(self, request: Request) -> Response:
        host = request.client.host if request.client else None
        try:
            # Counted in this process while Redis is down: registration stays open, bounded per
            # worker.
            await self.limits.acquire([
                Check("register.address", self.registration.per_address, address_key(host),
                      "this address"),
                Check("register.network", self.registration.per_network, network_key(host),
                      "this network"),
                Check("register.total", self.registration.total, "*", "all addresses")])
        except OverLimit as over:
            return oauth_error("slow_down",
                               f"Too many client registrations from {over.label}; retry later.",
                               429, {"retry-after": str(over.retry_after)})
        data = parse_json(await read_body(request, MAX_REGISTRATION_BYTES))
        metadata = validate_metadata(data, self.config.catalog, auth_methods=AUTH_METHODS,
                                     default_auth="client_secret_basic")

        def register(uow: UnitOfWork) -> tuple[Any, str | None]:
            # what registrations leave is cleared by registrations
            uow.repository(ClientRepository).sweep_unused()
            return register_client(uow, metadata, kind="dcr", unused_ttl=self.config.dcr_unused_ttl)

        row, secret = await self.db.write(register)
        log.info("oauth.client_registered", client_id=row.client_id,
                 auth=row.token_endpoint_auth_method)
        return JSONResponse(registration_response(row, secret), status_code=201,
                            headers={**NO_STORE, **CORS})


def _client(row: Any) -> Client | None:
    return Client.from_row(row) if row is not None else None


def _grant_outcome(response: Response) -> str:
    if response.status_code == 200:
        return "issued"
    try:
        error = json.loads(bytes(response.body)).get("error")
    except (ValueError, AttributeError):
        return "error"
    return error if error in OAUTH_TOKEN_ERRORS else "error"
