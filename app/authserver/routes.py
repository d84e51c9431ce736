"""HTTP endpoints of the built-in authorization server (Starlette), around ``app.auth.server``.

Each endpoint reads its (small, capped) body on the event loop, resolves the client's
metadata document or keys if needed (network, guarded), then hands the request to
authlib in a worker thread with one unit of work.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
import structlog
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749.util import extract_basic_authorization
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.auth import pages
from app.auth.accounts import AccountRepository, normalise_username
from app.auth.clients import (
    AUTH_METHODS,
    CimdResolver,
    Client,
    ClientKeys,
    ClientMetadataError,
    ClientRepository,
    register_client,
    registration_response,
    validate_metadata,
)
from app.auth.passwords import DUMMY_HASH, verify_password
from app.auth.server import ASSERTION_ALGORITHMS, SECRET_AUTH, FormRequest, OAuthServer, ServerConfig
from app.db import Database, DatabaseNotMigrated, DatabaseUnavailable
from app.limits import Check, Limits, LimitsUnavailable, OverLimit, Rate, address_key
from app.observability.metrics import Metrics

log = structlog.get_logger(__name__)
# RFC 6749 section 5.2's error codes (and RFC 8707's, and the 503 of an outage): a token request's outcome label is
# one of these, "issued" or "error", never a string of the client's.
OAUTH_TOKEN_ERRORS = frozenset({"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
                                "unsupported_grant_type", "invalid_scope", "invalid_target",
                                "temporarily_unavailable"})
MAX_FORM_BYTES = 64 * 1024
CSRF_COOKIE = "oauth_csrf"
# Set on a successful sign-in: a browser that once signed in to an account keeps its own count of that
# account's wrong passwords, apart from everyone else's (see SignInLimits).
DEVICE_COOKIE = "oauth_device"
DEVICE_TTL = 30 * 24 * 3600
TICKET_TTL = 600
UNAVAILABLE = "The sign-in service is unavailable; please retry shortly."
NO_STORE = {"cache-control": "no-store", "pragma": "no-cache"}
CORS = {"access-control-allow-origin": "*", "access-control-allow-headers": "authorization, content-type",
        "access-control-allow-methods": "GET, POST, OPTIONS"}


class BodyTooLarge(Exception):
    pass


async def read_body(request: Request, limit: int = MAX_FORM_BYTES) -> bytes:
    """The whole body, refused past ``limit`` whether declared or chunked (nothing else has read it yet)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise BodyTooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


class MalformedRequest(ValueError):
    pass


def parse_form(body: bytes | str) -> list[tuple[str, str]]:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=100)
    except ValueError:
        raise MalformedRequest("Too many parameters.") from None
    return no_nul(pairs)


def no_nul(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    # A NUL is never part of a valid parameter, and PostgreSQL refuses it in text: stop it at the door.
    if any("\x00" in key or "\x00" in value for key, value in pairs):
        raise MalformedRequest("A parameter contains a NUL character.")
    return pairs


def parse_json(body: bytes) -> Any:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeError, RecursionError):
        raise MalformedRequest("The body must be JSON.") from None
    if "\\u0000" in body.decode("utf-8", "replace"):
        raise MalformedRequest("The body contains a NUL character.")
    return data


def oauth_error(error: str, description: str, status: int = 400, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status_code=status,
                        headers={**NO_STORE, **CORS, **(headers or {})})


@dataclass
class Signer:
    """HMAC-signed, expiring values for the browser: CSRF tokens and the login ticket between the two pages."""

    secret: bytes

    def _mac(self, data: bytes) -> str:
        return base64.urlsafe_b64encode(hmac.new(self.secret, data, hashlib.sha256).digest()).decode().rstrip("=")

    def sign(self, payload: dict[str, Any]) -> str:
        data = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")
        return f"{data}.{self._mac(data.encode())}"

    def unsign(self, value: str) -> dict[str, Any] | None:
        data, _, mac = value.partition(".")
        if not mac or not hmac.compare_digest(mac.encode(), self._mac(data.encode()).encode()):
            return None
        try:
            payload = json.loads(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)))
        except ValueError:
            return None
        if not isinstance(payload, dict) or payload.get("exp", 0) < time.time():
            return None
        return payload

    def csrf_token(self, cookie: str) -> str:
        return self._mac(b"csrf|" + cookie.encode())


@dataclass(frozen=True)
class SignInLimits:
    """Password checks a sign-in may cost, reserved BEFORE the hash is computed and given back when it succeeds.

    ``per_name``: one address, one account name. ``per_address``: one address, any name (spraying).
    ``per_account``: one account name from every address together (a botnet). The last is the one an
    attacker can spend for the account's owner (a lock-out of new sign-ins for up to its window):
    a browser holding the account's device cookie is counted apart, so its owner still gets in.
    """

    per_name: Rate
    per_address: Rate
    per_account: Rate


@dataclass(frozen=True)
class RegistrationLimits:
    """``POST /register``: per client address (ChatGPT's users register from OpenAI's few addresses: sized
    for that), and all addresses together."""

    per_address: Rate
    total: Rate


class AuthorizationServerRoutes:
    def __init__(self, *, config: ServerConfig, db: Database, cimd: CimdResolver, client_keys: ClientKeys,
                 signer: Signer, limits: Limits, sign_in: SignInLimits, registration: RegistrationLimits,
                 secure_cookies: bool, jwks: dict[str, Any], metrics: Metrics | None = None) -> None:
        self.config = config
        self.metrics = metrics
        self.db = db
        self.cimd = cimd
        self.client_keys = client_keys
        self.signer = signer
        self.limits = limits
        self.sign_in = sign_in
        self.registration = registration
        self.password_checks = anyio.CapacityLimiter(4)
        self.secure_cookies = secure_cookies
        self.jwks = jwks

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/.well-known/oauth-authorization-server", self.metadata, methods=["GET", "OPTIONS"]),
            Route("/jwks.json", self.jwks_document, methods=["GET", "OPTIONS"]),
            Route("/authorize", self.authorize, methods=["GET", "POST"]),
            Route("/authorize/consent", self.consent, methods=["POST"]),
            Route("/token", self.grants_counted(self.guarded(self.token)), methods=["POST", "OPTIONS"]),
            Route("/revoke", self.guarded(self.revoke), methods=["POST", "OPTIONS"]),
            Route("/introspect", self.guarded(self.introspect), methods=["POST", "OPTIONS"]),
            Route("/register", self.guarded(self.register), methods=["POST", "OPTIONS"]),
        ]

    # --- documents -----------------------------------------------------------------------------------
    def metadata_document(self) -> dict[str, Any]:
        issuer = self.config.issuer
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "registration_endpoint": f"{issuer}/register",
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
        return JSONResponse(self.metadata_document(), headers={"cache-control": "public, max-age=300", **CORS})

    async def jwks_document(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=CORS)
        return JSONResponse(self.jwks, headers={"cache-control": "public, max-age=300", **CORS})

    # --- machinery -----------------------------------------------------------------------------------
    def guarded(self, endpoint: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """JSON endpoints: CORS preflight, body cap, and infrastructure failures as OAuth errors."""

        async def wrapper(request: Request) -> Response:
            if request.method == "OPTIONS":
                return Response(status_code=204, headers=CORS)
            try:
                return await endpoint(request)
            except BodyTooLarge:
                return oauth_error("invalid_request", f"The request body exceeds {MAX_FORM_BYTES} bytes.", 413)
            except MalformedRequest as exc:
                error = "invalid_client_metadata" if request.url.path == "/register" else "invalid_request"
                return oauth_error(error, str(exc))
            except (DatabaseUnavailable, DatabaseNotMigrated):
                return oauth_error("temporarily_unavailable", "The server cannot reach its database; retry shortly.",
                                   503, {"retry-after": "5"})
            except ClientMetadataError as exc:
                status = 401 if exc.error == "invalid_client" else 400
                return oauth_error(exc.error, str(exc), status)

        return wrapper

    def grants_counted(self, endpoint: Callable[[Request], Awaitable[Response]]
                       ) -> Callable[[Request], Awaitable[Response]]:
        """/token's outcome as answered, the guard's answers (a bad body, an outage) included: ``issued``, the OAuth
        error code, or ``error`` for a failure of the server's own. A request cancelled (the client left) is not
        an outcome."""

        async def wrapper(request: Request) -> Response:
            if request.method == "OPTIONS" or self.metrics is None:
                return await endpoint(request)
            try:
                response = await endpoint(request)
            except Exception:
                self.metrics.token_grant(getattr(request.state, "grant_type", ""), "error")
                raise
            self.metrics.token_grant(getattr(request.state, "grant_type", ""), _grant_outcome(response))
            return response

        return wrapper

    def count_sign_in(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.sign_in(outcome)

    def form_request(self, request: Request, form: list[tuple[str, str]], query: list[tuple[str, str]] | None = None,
                     method: str | None = None) -> FormRequest:
        query = query if query is not None else no_nul(list(request.query_params.multi_items()))
        return FormRequest(method or request.method, f"{self.config.issuer}{request.url.path}", request.headers,
                           query, form)

    async def run(self, fn: Callable[[OAuthServer], Any], *, write: bool = True, client_keys: KeySet | None = None
                  ) -> Any:
        def work(uow: Any) -> Any:
            return fn(OAuthServer(self.config, uow, client_keys=client_keys))

        return await (self.db.write(work) if write else self.db.read(work))

    @staticmethod
    def to_response(result: tuple[int, Any, dict[str, str]]) -> Response:
        status, body, headers = result
        if status == 302:
            return Response(status_code=302, headers={**headers, **NO_STORE})
        return JSONResponse(body, status_code=status, headers={**headers, **NO_STORE, **CORS})

    async def prepare_client(self, request: Request, form: list[tuple[str, str]]) -> KeySet | None:
        """Fetch what authlib will need about the calling client, before the transaction: its metadata
        document (CIMD) and, for private_key_jwt, its public keys."""
        data = dict(form)
        client_id = data.get("client_id") or extract_basic_authorization(request.headers)[0]
        kid = None
        if assertion := data.get("client_assertion"):
            try:
                extracted = jws.extract_compact(assertion.encode())
                claims = json.loads(extracted.payload)
                client_id = claims.get("sub") if isinstance(claims, dict) else None
                kid = extracted.headers().get("kid")
            except (JoseError, ValueError, UnicodeError, RecursionError, AttributeError):
                return None  # authlib reports the malformed assertion
        if not isinstance(client_id, str) or not client_id:
            return None
        if self.cimd.is_document_url(client_id):
            await self.cimd.ensure(client_id)
        if not assertion:
            return None
        client = await self.db.read(lambda uow: _client(uow.repository(ClientRepository).get(client_id)))
        # A client with a single key may omit kid (RFC 7523 does not require it): joserfc then uses that key.
        return await self.client_keys.keys(client, kid) if client is not None else None

    # --- /token, /revoke, /introspect, /register -----------------------------------------------------
    async def token(self, request: Request) -> Response:
        form = await self.urlencoded(request)
        if isinstance(form, Response):
            return form
        request.state.grant_type = dict(form).get("grant_type", "")  # for grants_counted
        keys = await self.prepare_client(request, form)
        req = self.form_request(request, form, [])
        return self.to_response(await self.run(lambda server: server.create_token_response(req), client_keys=keys))

    async def revoke(self, request: Request) -> Response:
        return await self.endpoint(request, "revocation")

    async def introspect(self, request: Request) -> Response:
        return await self.endpoint(request, "introspection")

    async def endpoint(self, request: Request, name: str) -> Response:
        form = await self.urlencoded(request)
        if isinstance(form, Response):
            return form
        keys = await self.prepare_client(request, form)
        req = self.form_request(request, form, [])
        return self.to_response(await self.run(lambda server: server.create_endpoint_response(name, req),
                                               client_keys=keys))

    async def urlencoded(self, request: Request) -> list[tuple[str, str]] | Response:
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
            return oauth_error("invalid_request", "Send the parameters as application/x-www-form-urlencoded.")
        return parse_form(await read_body(request))

    async def register(self, request: Request) -> Response:
        address = address_key(request.client.host if request.client else None)
        try:
            # Counted in this process while Redis is down: registration stays open, bounded per worker.
            await self.limits.acquire([
                Check("register.address", self.registration.per_address, address, "this address"),
                Check("register.total", self.registration.total, "*", "all addresses")])
        except OverLimit as over:
            return oauth_error("slow_down", f"Too many client registrations from {over.label}; retry later.", 429,
                               {"retry-after": str(over.retry_after)})
        data = parse_json(await read_body(request))
        metadata = validate_metadata(data, self.config.catalog, auth_methods=AUTH_METHODS,
                                     default_auth="client_secret_basic")
        row, secret = await self.db.write(lambda uow: register_client(uow, metadata, kind="dcr"))
        log.info("oauth.client_registered", client_id=row.client_id, auth=row.token_endpoint_auth_method)
        return JSONResponse(registration_response(row, secret), status_code=201, headers={**NO_STORE, **CORS})

    # --- /authorize: login, then consent -------------------------------------------------------------
    async def authorize(self, request: Request) -> Response:
        if request.method == "GET":
            return await self.browser_step(request, lambda: self.show_login(request, no_nul(list(
                request.query_params.multi_items()))))
        return await self.browser_step(request, lambda: self.posted(request, self.login))

    async def consent(self, request: Request) -> Response:
        return await self.browser_step(request, lambda: self.posted(request, self.decide))

    async def posted(self, request: Request, step: Callable[[Request, dict[str, str]], Awaitable[Response]]
                     ) -> Response:
        return await step(request, dict(parse_form(await read_body(request))))

    async def browser_step(self, request: Request, step: Callable[[], Awaitable[Response]]) -> Response:
        """The pages' failures as pages (the JSON endpoints have ``guarded``)."""
        try:
            return await step()
        except BodyTooLarge:
            return self.error_page(request, "The form is too large.", 413)
        except MalformedRequest as exc:
            return self.error_page(request, str(exc))
        except (DatabaseUnavailable, DatabaseNotMigrated):
            return self.error_page(request, UNAVAILABLE, 503, {"retry-after": "5"})
        except LimitsUnavailable:
            # Sign-in fails closed: without the shared counts, every replica would allow its own share of guesses.
            return self.error_page(request, UNAVAILABLE, 503, {"retry-after": "30"})

    def locale(self, request: Request, query: list[tuple[str, str]] | None = None) -> str:
        return pages.negotiate(dict(query or []).get("ui_locales"), request.headers.get("accept-language"))

    def error_page(self, request: Request, message: str, status: int = 400,
                   headers: dict[str, str] | None = None) -> Response:
        return HTMLResponse(pages.error_page(locale=self.locale(request), message=message, message_lang="en"),
                            status_code=status, headers={"content-security-policy": pages.PAGE_CSP, **NO_STORE,
                                                         **(headers or {})})

    async def validate(self, request: Request, query: list[tuple[str, str]]) -> Response | tuple[Client, str, str]:
        """The client, granted scope and redirect URI of a valid authorization request; else the response to send.

        Errors the client can be told about go back to its redirect URI (with ``iss``); errors
        about the client or the redirect URI itself stay on our page (RFC 6749 §4.1.2.1).
        """
        client_id = dict(query).get("client_id")
        if self.cimd.is_document_url(client_id):
            try:
                await self.cimd.ensure(client_id)  # type: ignore[arg-type]
            except ClientMetadataError as exc:
                return self.error_page(request, str(exc))
        req = self.form_request(request, [], query, method="GET")

        def check(server: OAuthServer) -> Any:
            try:
                grant = server.get_consent_grant(req)
            except OAuth2Error as error:
                if error.redirect_uri:
                    return server.handle_error_response(req, error)
                return error.get_error_description() or error.error
            return grant.client, req.scope or "", grant.redirect_uri

        result = await self.run(check, write=False)
        if isinstance(result, str):
            return self.error_page(request, result)
        if isinstance(result[0], int):
            return self.to_response(result)
        return result

    def csrf(self, request: Request) -> tuple[str, str | None]:
        cookie = request.cookies.get(CSRF_COOKIE)
        if not cookie or len(cookie) > 100:
            return secrets.token_urlsafe(24), None
        return cookie, cookie

    def page(self, body: str, cookie: str, redirect_uri: str | None, status: int = 200) -> Response:
        response = HTMLResponse(body, status_code=status, headers={
            "content-security-policy": pages.page_csp(redirect_uri), "x-frame-options": "DENY",
            "referrer-policy": "no-referrer", **NO_STORE})
        response.set_cookie(CSRF_COOKIE, cookie, max_age=3600, path="/authorize", httponly=True,
                            secure=self.secure_cookies, samesite="lax")
        return response

    async def show_login(self, request: Request, query: list[tuple[str, str]], *, error: str | None = None,
                         username: str = "", status: int = 200) -> Response:
        validated = await self.validate(request, query)
        if isinstance(validated, Response):
            return validated
        client, _, redirect_uri = validated
        cookie, _ = self.csrf(request)
        locale = self.locale(request, query)
        body = pages.login_page(
            locale=locale, client_name=client.display_name, client_host=client.display_host, action="/authorize",
            hidden={"oauth_request": urlencode(query)}, csrf_token=self.signer.csrf_token(cookie),
            error=pages.text(locale, error) if error else None, username=username)
        return self.page(body, cookie, redirect_uri, status)

    def csrf_ok(self, request: Request, form: dict[str, str]) -> bool:
        _, cookie = self.csrf(request)
        return cookie is not None and hmac.compare_digest(form.get("csrf_token", "").encode(),
                                                          self.signer.csrf_token(cookie).encode())

    def device(self, request: Request, name: str) -> str | None:
        """This browser's device id for the account ``name``, if it holds a valid device cookie for it."""
        payload = self.signer.unsign(request.cookies.get(DEVICE_COOKIE, "")[:1024])
        if payload and payload.get("p") == "device" and payload.get("u") == _fingerprint(name):
            device = payload.get("d")
            return device if isinstance(device, str) and device else None
        return None

    def sign_in_checks(self, request: Request, name: str, device: str | None) -> list[Check]:
        address = address_key(request.client.host if request.client else None)
        account = f"{name}|device:{device}" if device else name
        # The address first: names (which the client chooses) only get keys for attempts their address admits.
        return [Check("signin.address", self.sign_in.per_address, address, "this address"),
                Check("signin.name", self.sign_in.per_name, f"{address}|{name}", "this address and account"),
                Check("signin.account", self.sign_in.per_account, account, "this account")]

    async def login(self, request: Request, form: dict[str, str]) -> Response:
        query = parse_form(form.get("oauth_request", ""))
        username = form.get("username", "")[:64]
        if not self.csrf_ok(request, form):
            self.count_sign_in("csrf_failed")
            return await self.show_login(request, query, error="csrf", username=username, status=403)
        login_name = normalise_username(username)
        device = self.device(request, login_name)
        try:
            # Reserved before the hash, atomically: N concurrent guesses cost at most the limit in hashes.
            reservation = await self.limits.acquire(self.sign_in_checks(request, login_name, device), strict=True)
        except OverLimit as over:
            self.count_sign_in("locked")
            locked = await self.show_login(request, query, error="locked", username=username, status=429)
            locked.headers["retry-after"] = str(over.retry_after)
            return locked
        except LimitsUnavailable:
            self.count_sign_in("unavailable")
            raise
        try:
            validated = await self.validate(request, query)
            if isinstance(validated, Response):
                await reservation.release()  # no password was judged
                self.count_sign_in("invalid_request")
                return validated
            client, scope, redirect_uri = validated
            password = form.get("password", "")[:1024]
            candidate = await self.db.read(lambda uow: _credentials(uow.repository(AccountRepository).by_username(
                username)))
            # scrypt (32 MiB, tens of ms) outside the database session, a few at a time.
            account = await anyio.to_thread.run_sync(_verified, candidate, password, limiter=self.password_checks)
        except Exception:
            self.count_sign_in("error")
            await reservation.release()  # no password was judged
            raise
        except BaseException:  # cancelled: the client left, no outcome
            await reservation.release()
            raise
        if account is None:
            log.info("oauth.login_failed", client_id=client.client_id)  # the reservation stays: a failure counted
            self.count_sign_in("bad_credentials")
            return await self.show_login(request, query, error="bad_credentials", username=username, status=401)
        await reservation.release()  # only its own: a success never resets what others counted
        self.count_sign_in("success")
        account_id, account_name = account
        locale = self.locale(request, query)
        request_text = form.get("oauth_request", "")
        expires = int(time.time()) + TICKET_TTL
        cookie, _ = self.csrf(request)
        # Purpose-bound, and bound to this request and this browser's CSRF cookie.
        ticket = self.signer.sign({"p": "consent", "a": account_id, "r": _fingerprint(request_text),
                                   "c": _fingerprint(cookie), "exp": expires})
        scopes = [(name, s.describe(locale)) for name in scope.split() if (s := self.config.catalog.get(name))]
        body = pages.consent_page(
            locale=locale, client_name=client.display_name, client_host=client.display_host,
            account_name=account_name, scopes=scopes, action="/authorize/consent",
            hidden={"oauth_request": request_text, "login_ticket": ticket}, csrf_token=self.signer.csrf_token(cookie))
        response = self.page(body, cookie, redirect_uri)
        device_cookie = self.signer.sign({"p": "device", "u": _fingerprint(login_name),
                                          "d": device or secrets.token_urlsafe(12),
                                          "exp": int(time.time()) + DEVICE_TTL})
        response.set_cookie(DEVICE_COOKIE, device_cookie, max_age=DEVICE_TTL, path="/authorize", httponly=True,
                            secure=self.secure_cookies, samesite="lax")
        return response

    async def decide(self, request: Request, form: dict[str, str]) -> Response:
        request_text = form.get("oauth_request", "")
        query = parse_form(request_text)
        ticket = self.signer.unsign(form.get("login_ticket", ""))
        _, cookie = self.csrf(request)
        if (not self.csrf_ok(request, form) or ticket is None or ticket.get("p") != "consent"
                or ticket.get("r") != _fingerprint(request_text) or ticket.get("c") != _fingerprint(cookie or "")):
            return await self.show_login(request, query, error="csrf", status=403)
        validated = await self.validate(request, query)
        if isinstance(validated, Response):
            return validated
        approve = form.get("decision") == "approve"
        req = self.form_request(request, [], query, method="GET")

        def respond(server: OAuthServer) -> Any:
            user = server.enabled_account(ticket["a"]) if approve else None
            grant = server.get_consent_grant(req, end_user=user)
            return server.create_authorization_response(req, grant_user=user, grant=grant)

        try:
            result = await self.run(respond)
        except OAuth2Error as error:  # the request turned invalid between the pages (client changed, say)
            return self.error_page(request, error.get_error_description() or error.error)
        log.info("oauth.consent", approved=approve, subject=ticket["a"] if approve else None)
        return self.to_response(result)


def _client(row: Any) -> Client | None:
    return Client.from_row(row) if row is not None else None


def _credentials(account: Any) -> tuple[str, str, str, bool] | None:
    if account is None:
        return None
    return account.id, account.display_name, account.password_hash, account.disabled_at is None


def _verified(candidate: tuple[str, str, str, bool] | None, password: str) -> tuple[str, str] | None:
    """(id, display name) when the password matches an enabled account; as slow for unknown names."""
    if candidate is None:
        verify_password(password, DUMMY_HASH)
        return None
    account_id, name, stored, enabled = candidate
    return (account_id, name) if verify_password(password, stored) and enabled else None


def _fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _grant_outcome(response: Response) -> str:
    if response.status_code == 200:
        return "issued"
    try:
        error = json.loads(bytes(response.body)).get("error")
    except (ValueError, AttributeError):
        return "error"
    return error if error in OAUTH_TOKEN_ERRORS else "error"
