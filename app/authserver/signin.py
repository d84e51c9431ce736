"""The browser side of /authorize: the login page (password checks reserved against the sign-in limits before
the hash is computed), then the consent page, each a signed form; failures are pages, never JSON."""


import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import anyio
import structlog
from authlib.oauth2 import OAuth2Error
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from app.authserver import pages
from app.authserver.accounts import AccountRepository, normalise_username
from app.authserver.clients import (
    CimdResolver,
    Client,
    ClientMetadataError,
)
from app.authserver.forms import (
    NO_STORE,
    BodyTooLarge,
    MalformedRequest,
    Signer,
    no_nul,
    parse_form,
    read_body,
)
from app.authserver.passwords import DUMMY_HASH, verify_password
from app.authserver.protocol import FormRequest, ServerConfig
from app.authserver.server import OAuthServer
from app.db import Database, DatabaseNotMigrated, DatabaseUnavailable
from app.limits import Check, Limits, LimitsUnavailable, OverLimit, Rate, address_key

log = structlog.get_logger(__name__)
CSRF_COOKIE = "oauth_csrf"
# Set on a successful sign-in: a browser that once signed in to an account keeps its own count of that
# account's wrong passwords, apart from everyone else's (see SignInLimits).
DEVICE_COOKIE = "oauth_device"
DEVICE_TTL = 30 * 24 * 3600
DEVICE_PATHS = ("/authorize", "/account")
TICKET_TTL = 600
# Clients whose authorization errors go back to their redirect URI: a metadata document (its redirect URIs are
# vouched for by the host of its client_id) or an operator's registration; never a DCR client.
REDIRECTED_KINDS = ("cimd", "static")
UNAVAILABLE = "The sign-in service is unavailable; please retry shortly."


@dataclass(frozen=True)
class PasswordCheck:
    """How a password sign-in went: ``account`` (id, display name) opened, else ``error`` (``locked``, with
    ``retry_after``, or ``bad_credentials``), or ``response``, the request's own refusal; ``checked`` is what the
    ``before`` step returned."""

    account: tuple[str, str] | None = None
    error: str | None = None
    retry_after: int | None = None
    response: Response | None = None
    checked: Any = None
    device: str | None = None


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


class SignInPages:
    """/authorize and /authorize/consent, for ``AuthorizationServerRoutes`` (which holds what they use)."""

    config: ServerConfig
    db: Database
    cimd: CimdResolver
    signer: Signer
    limits: Limits
    sign_in: SignInLimits
    password_checks: anyio.CapacityLimiter
    secure_cookies: bool
    password_login: bool
    providers: Callable[[str], list[tuple[str, str]]]
    run: Callable[..., Awaitable[Any]]
    form_request: Callable[..., FormRequest]
    to_response: Callable[[tuple[int, Any, dict[str, str]]], Response]
    count_sign_in: Callable[[str], None]

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

    def as_page(self, handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """A browser route whose failures (an outage, a malformed request) are pages, as /authorize's are."""
        async def endpoint(request: Request) -> Response:
            return await self.browser_step(request, lambda: handler(request))
        return endpoint

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
                            status_code=status, headers={"content-security-policy": pages.PAGE_CSP,
                                                         "x-frame-options": "DENY", **NO_STORE, **(headers or {})})

    async def validate(self, request: Request, query: list[tuple[str, str]]) -> Response | tuple[Client, str, str]:
        """The client, granted scope and redirect URI of a valid authorization request; else the response to send.

        Errors the client can be told about go back to its redirect URI (with ``iss``); errors
        about the client or the redirect URI itself stay on our page (RFC 6749 §4.1.2.1). So do all
        errors of a client anyone registered (DCR): redirected before any sign-in, they would make
        this server an open redirector with its own issuer in the query (RFC 9700 §4.11.2); a client
        whose URIs are vouched for (its metadata document's host, or an operator's registration) is
        redirected.
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
                client = server.query_client(req.payload.client_id) if error.redirect_uri else None
                if client is not None and client.kind in REDIRECTED_KINDS:
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
            error=pages.text(locale, error) if error else None, username=username,
            providers=self.providers(urlencode({"oauth_request": urlencode(query)})), password=self.password_login)
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

    async def check_password(self, request: Request, username: str, password: str,
                             before: Callable[[], Awaitable[Any]] | None = None) -> PasswordCheck:
        """The account ``username``/``password`` open, counted against the sign-in limits: checks reserved
        BEFORE the hash is computed (N concurrent guesses cost at most the limit in hashes) and given back when
        no password was judged or it matched. ``before`` runs inside the reservation (the request's own checks):
        a Response from it ends the attempt."""
        login_name = normalise_username(username)
        device = self.device(request, login_name)
        try:
            reservation = await self.limits.acquire(self.sign_in_checks(request, login_name, device), strict=True)
        except OverLimit as over:
            self.count_sign_in("locked")
            return PasswordCheck(error="locked", retry_after=over.retry_after)
        except LimitsUnavailable:
            self.count_sign_in("unavailable")
            raise
        try:
            checked = await before() if before is not None else None
            if isinstance(checked, Response):
                await reservation.release()  # no password was judged
                self.count_sign_in("invalid_request")
                return PasswordCheck(response=checked)
            candidate = await self.db.read(lambda uow: _credentials(uow.repository(AccountRepository).by_username(
                username)))
            # scrypt (32 MiB, tens of ms) outside the database session, a few at a time.
            account = await anyio.to_thread.run_sync(_verified, candidate, password[:1024],
                                                     limiter=self.password_checks)
        except Exception:
            self.count_sign_in("error")
            await reservation.release()  # no password was judged
            raise
        except BaseException:  # cancelled: the client left, no outcome
            await reservation.release()
            raise
        if account is None:
            self.count_sign_in("bad_credentials")  # the reservation stays: a failure counted
            return PasswordCheck(error="bad_credentials", checked=checked)
        await reservation.release()  # only its own: a success never resets what others counted
        self.count_sign_in("success")
        return PasswordCheck(account=account, checked=checked, device=device)

    def device_cookie(self, response: Response, username: str, device: str | None) -> None:
        value = self.signer.sign({"p": "device", "u": _fingerprint(normalise_username(username)),
                                  "d": device or secrets.token_urlsafe(12), "exp": int(time.time()) + DEVICE_TTL})
        # Both sign-in forms (/authorize, /account/login) read it: one cookie per path, the same device.
        for path in DEVICE_PATHS:
            response.set_cookie(DEVICE_COOKIE, value, max_age=DEVICE_TTL, path=path, httponly=True,
                                secure=self.secure_cookies, samesite="lax")

    async def login(self, request: Request, form: dict[str, str]) -> Response:
        query = parse_form(form.get("oauth_request", ""))
        username = form.get("username", "")[:64]
        if not self.password_login:
            return self.error_page(request, "Password sign-in is turned off here: use a provider's button.", 403)
        if not self.csrf_ok(request, form):
            self.count_sign_in("csrf_failed")
            return await self.show_login(request, query, error="csrf", username=username, status=403)
        outcome = await self.check_password(request, username, form.get("password", ""),
                                            before=lambda: self.validate(request, query))
        if outcome.response is not None:
            return outcome.response
        if outcome.error == "locked":
            locked = await self.show_login(request, query, error="locked", username=username, status=429)
            locked.headers["retry-after"] = str(outcome.retry_after)
            return locked
        client, scope, redirect_uri = outcome.checked
        if outcome.account is None:
            log.info("oauth.login_failed", client_id=client.client_id)
            return await self.show_login(request, query, error="bad_credentials", username=username, status=401)
        cookie, _ = self.csrf(request)
        response = self.consent_step(request, form.get("oauth_request", ""), query, validated=outcome.checked,
                                     account=outcome.account, cookie=cookie)
        self.device_cookie(response, username, outcome.device)
        return response

    def consent_step(self, request: Request, request_text: str, query: list[tuple[str, str]], *,
                     validated: tuple[Client, str, str], account: tuple[str, str], cookie: str) -> Response:
        """The consent page for a signed-in ``account`` (id, display name), however it signed in."""
        client, scope, redirect_uri = validated
        account_id, account_name = account
        locale = self.locale(request, query)
        # Purpose-bound, and bound to this request and this browser's CSRF cookie.
        ticket = self.signer.sign({"p": "consent", "a": account_id, "r": _fingerprint(request_text),
                                   "c": _fingerprint(cookie), "exp": int(time.time()) + TICKET_TTL})
        scopes = [(name, s.describe(locale)) for name in scope.split() if (s := self.config.catalog.get(name))]
        body = pages.consent_page(
            locale=locale, client_name=client.display_name, client_host=client.display_host,
            account_name=account_name, scopes=scopes, action="/authorize/consent",
            hidden={"oauth_request": request_text, "login_ticket": ticket}, csrf_token=self.signer.csrf_token(cookie))
        return self.page(body, cookie, redirect_uri)

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


def _credentials(account: Any) -> tuple[str, str, str, bool] | None:
    # An account without a password (it signs in through its provider) is opened by none.
    if account is None or account.password_hash is None:
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
