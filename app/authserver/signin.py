"""The browser side of /authorize: the login page (password checks reserved against the sign-in
limits before the hash is computed: ``PasswordSignIn``, which ``/account`` shares), then the consent
page, each a signed form; failures are pages, never JSON."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import anyio
import structlog
from authlib.oauth2 import OAuth2Error
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from app.authserver import pages
from app.authserver.accounts import AccountRepository, normalise_username
from app.authserver.clients import CimdResolver, Client, ClientMetadataError
from app.authserver.forms import Signer, no_nul, parse_form, read_body
from app.authserver.pages import Pages
from app.authserver.passwords import DUMMY_HASH, verify_password
from app.authserver.protocol import OAuthReply, ServerConfig, reply
from app.authserver.server import OAuthServer
from app.authserver.transactions import Transactions
from app.authserver.upstream import UpstreamProvider
from app.db import Database
from app.limits import Check, Limits, LimitsUnavailable, OverLimit, Rate, address_key
from app.observability.metrics import Metrics

log = structlog.get_logger(__name__)
CSRF_COOKIE = "oauth_csrf"
# Set on a successful sign-in: a browser that once signed in to an account keeps its own count of
# that account's wrong passwords, apart from everyone else's (see SignInLimits).
DEVICE_COOKIE = "oauth_device"
DEVICE_TTL = 30 * 24 * 3600
DEVICE_PATHS = ("/authorize", "/account")
TICKET_TTL = 600
# Clients whose authorization errors go back to their redirect URI: a metadata document (its
# redirect URIs are vouched for by the host of its client_id) or an operator's registration; never a
# DCR client.
REDIRECTED_KINDS = ("cimd", "static")


# The authorization request's parameters that this server or authlib reads; each may be given once
# (a repeated one the page names, so the name is never one a caller made up).
OAUTH_PARAMETERS = frozenset({"response_type", "client_id", "redirect_uri", "scope", "state",
                              "code_challenge", "code_challenge_method", "resource", "nonce",
                              "prompt", "response_mode", "ui_locales"})


@dataclass(frozen=True)
class Authorization:
    """A valid authorization request: its client, the scope it may be granted, where the answer
    goes, the resource its token will be for."""

    client: Client
    scope: str
    redirect_uri: str
    resource: str  # the one validation bound (RFC 8707): the grant's, the consent page's


@dataclass(frozen=True)
class Refusal:
    """An authorization request that cannot go on, and cannot be sent back to its client: why, in
    English (the OAuth library's error description, a client document's fault), or a catalog key."""

    message: str = ""
    key: str | None = None


@dataclass(frozen=True)
class PasswordCheck:
    """How a password sign-in went: ``account`` (id, display name) opened, else ``error``
    (``locked``, with ``retry_after``, or ``bad_credentials``), or ``response``, the request's own
    refusal; ``checked``: the authorization request the ``before`` step validated."""

    account: tuple[str, str] | None = None
    error: str | None = None
    retry_after: int | None = None
    response: Response | None = None
    checked: Authorization | None = None
    device: str | None = None


@dataclass(frozen=True)
class SignInLimits:
    """Password checks a sign-in may cost, reserved BEFORE the hash is computed and given back when
    it succeeds.

    ``per_name``: one address, one account name. ``per_address``: one address, any name (spraying).
    ``per_account``: one account name from every address together (a botnet). The last is the one an
    attacker can spend for the account's owner (a lock-out of new sign-ins for up to its window):
    a browser holding the account's device cookie is counted apart, so its owner still gets in.
    """

    per_name: Rate
    per_address: Rate
    per_account: Rate


@dataclass(frozen=True, eq=False)
class SignInCounter:
    """Counts how sign-ins end (``Metrics.sign_in``), when the server keeps metrics."""

    metrics: Metrics | None

    def __call__(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.sign_in(outcome)


@dataclass(frozen=True)
class ProviderLinks:
    """The sign-in pages' links to the upstream providers."""

    providers: Mapping[str, UpstreamProvider]

    def __call__(self, query: str) -> list[tuple[str, str]]:
        """(name, start URL) of each provider, the start carrying ``query`` (the request to come
        back to)."""
        return [(p.name, f"/login/{p.id}?{query}") for p in self.providers.values()]


@dataclass(frozen=True, kw_only=True, eq=False)
class PasswordSignIn:
    """Password checks counted against the sign-in limits (``/authorize`` and ``/account`` share
    them), and the device cookie that sets the count of a browser its account's owner signed in with
    apart."""

    db: Database
    signer: Signer
    limits: Limits
    rates: SignInLimits
    count: SignInCounter
    secure_cookies: bool
    # scrypt takes 32 MiB and tens of ms: a few at a time, whatever the number of sign-ins
    # waiting.
    password_checks: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(4))

    def device(self, request: Request, name: str) -> str | None:
        """This browser's device id for the account ``name``, if it holds a valid device cookie for
        it."""
        payload = self.signer.unsign(request.cookies.get(DEVICE_COOKIE, "")[:1024])
        if payload and payload.get("p") == "device" and payload.get("u") == _fingerprint(name):
            device = payload.get("d")
            return device if isinstance(device, str) and device else None
        return None

    def checks(self, request: Request, name: str, device: str | None) -> list[Check]:
        address = address_key(request.client.host if request.client else None)
        account = f"{name}|device:{device}" if device else name
        # The address first: names (which the client chooses) only get keys for attempts their
        # address admits.
        return [Check("signin.address", self.rates.per_address, address, "this address"),
                Check("signin.name", self.rates.per_name, f"{address}|{name}",
                      "this address and account"),
                Check("signin.account", self.rates.per_account, account, "this account")]

    async def check(
        self, request: Request, username: str, password: str,
        before: Callable[[], Awaitable[Response | Authorization]] | None = None,
    ) -> PasswordCheck:
        """The account ``username``/``password`` open, counted against the sign-in limits: checks
        reserved BEFORE the hash is computed (N concurrent guesses cost at most the limit in hashes)
        and given back when no password was judged or it matched. ``before`` runs inside the
        reservation (the request's own checks): a Response from it ends the attempt."""
        login_name = normalise_username(username)
        device = self.device(request, login_name)
        try:
            reservation = await self.limits.acquire(self.checks(request, login_name, device),
                                                    strict=True)
        except OverLimit as over:
            self.count("locked")
            return PasswordCheck(error="locked", retry_after=over.retry_after)
        except LimitsUnavailable:
            self.count("unavailable")
            raise
        try:
            checked = await before() if before is not None else None
            if isinstance(checked, Response):
                await reservation.release()  # no password was judged
                self.count("invalid_request")
                return PasswordCheck(response=checked)
            candidate = await self.db.read(lambda uow: _credentials(
                uow.repository(AccountRepository).by_username(username)))
            # The hash outside the database session.
            account = await anyio.to_thread.run_sync(_verified, candidate, password[:1024],
                                                     limiter=self.password_checks)
        except Exception:
            self.count("error")
            await reservation.release()  # no password was judged
            raise
        except BaseException:  # cancelled: the client left, no outcome
            await reservation.release()
            raise
        if account is None:
            self.count("bad_credentials")  # the reservation stays: a failure counted
            return PasswordCheck(error="bad_credentials", checked=checked)
        await reservation.release()  # only its own: a success never resets what others counted
        self.count("success")
        return PasswordCheck(account=account, checked=checked, device=device)

    def device_cookie(self, response: Response, username: str, device: str | None) -> None:
        value = self.signer.sign({"p": "device", "u": _fingerprint(normalise_username(username)),
                                  "d": device or secrets.token_urlsafe(12),
                                  "exp": int(time.time()) + DEVICE_TTL})
        # Both sign-in forms (/authorize, /account/login) read it: one cookie per path, the same
        # device.
        for path in DEVICE_PATHS:
            response.set_cookie(DEVICE_COOKIE, value, max_age=DEVICE_TTL, path=path, httponly=True,
                                secure=self.secure_cookies, samesite="lax")


@dataclass(frozen=True, kw_only=True, eq=False)
class SignInPages:
    """``/authorize`` (the login page, then the consent page) and ``/authorize/consent``."""

    config: ServerConfig
    cimd: CimdResolver
    signer: Signer
    pages: Pages
    transactions: Transactions
    passwords: PasswordSignIn
    providers: ProviderLinks
    count: SignInCounter
    secure_cookies: bool
    password_login: bool

    def routes(self) -> list[BaseRoute]:
        return [Route("/authorize", self.pages.guarded(self.authorize), methods=["GET", "POST"]),
                Route("/authorize/consent", self.pages.guarded(self.consent), methods=["POST"])]

    async def authorize(self, request: Request) -> Response:
        if request.method == "GET":
            return await self.show_login(request, no_nul(list(request.query_params.multi_items())))
        return await self.login(request, dict(parse_form(await read_body(request))))

    async def consent(self, request: Request) -> Response:
        return await self.decide(request, dict(parse_form(await read_body(request))))

    async def validate(self, request: Request,
                       query: list[tuple[str, str]]) -> Response | Authorization:
        """The client, granted scope and redirect URI of a valid authorization request; else the
        response to send.

        Errors the client can be told about go back to its redirect URI (with ``iss``); errors
        about the client or the redirect URI itself stay on our page (RFC 6749 §4.1.2.1). So do all
        errors of a client anyone registered (DCR): redirected before any sign-in, they would make
        this server an open redirector with its own issuer in the query (RFC 9700 §4.11.2); a client
        whose URIs are vouched for (its metadata document's host, or an operator's registration) is
        redirected.
        """
        # RFC 6749 §3.1: no parameter twice. Readers of a query differ on which of two values
        # counts (authlib the first, a dict the last): the client whose document is fetched, the
        # resource the consent page shows, must be the one validated, so there is only one.
        # RFC 8707 lets `resource` repeat, for a server that issues tokens for several at once;
        # this one binds a token to its one resource, so a second is refused like any repeat.
        names = [name for name, _ in query if name in OAUTH_PARAMETERS]
        if repeated := next((n for n in names if names.count(n) > 1), None):
            return self.pages.error(request, "error.repeated_parameter", query=query,
                                    name=repeated)
        client_id = dict(query).get("client_id")
        if client_id is not None and self.cimd.is_document_url(client_id):
            try:
                await self.cimd.ensure(client_id)
            except ClientMetadataError as exc:
                return self.pages.refusal(request, str(exc), query=query)
        req = self.transactions.form_request(request, [], query, method="GET")

        def check(server: OAuthServer) -> Authorization | OAuthReply | Refusal:
            try:
                grant = server.get_consent_grant(req)
            except OAuth2Error as error:
                client = server.query_client(req.payload.client_id) if error.redirect_uri else None
                if client is not None and client.kind in REDIRECTED_KINDS:
                    return reply(server.handle_error_response(req, error))
                return Refusal(_described(error))
            except ValueError:  # authlib's error about a value it may not echo (RFC 6749 §5.2)
                return Refusal(key="error.malformed_request")
            # Validation bound the resource (a request naming none gets the server's only one).
            assert req.resource is not None
            return Authorization(grant.client, req.scope or "", grant.redirect_uri, req.resource)

        result = await self.transactions.run(check, write=False)
        if isinstance(result, Authorization):
            return result
        if isinstance(result, OAuthReply):
            return result.response()
        if result.key is not None:
            return self.pages.error(request, result.key, query=query)
        return self.pages.refusal(request, result.message, query=query)

    def csrf(self, request: Request) -> tuple[str, str | None]:
        cookie = request.cookies.get(CSRF_COOKIE)
        if not cookie or len(cookie) > 100:
            return secrets.token_urlsafe(24), None
        return cookie, cookie

    def page(self, request: Request, page: pages.Page, cookie: str, redirect_uri: str | None,
             status: int = 200) -> Response:
        response = self.pages.respond(request, page, status=status, redirect_uri=redirect_uri)
        response.set_cookie(CSRF_COOKIE, cookie, max_age=3600, path="/authorize", httponly=True,
                            secure=self.secure_cookies, samesite="lax")
        return response

    async def show_login(self, request: Request, query: list[tuple[str, str]], *,
                         error: str | None = None, username: str = "",
                         status: int = 200) -> Response:
        validated = await self.validate(request, query)
        if isinstance(validated, Response):
            return validated
        cookie, _ = self.csrf(request)
        locale = self.pages.locale(request, query)
        page = pages.login_page(
            locale=locale, client_name=validated.client.display_name,
            client_host=validated.client.display_host,
            action="/authorize", hidden={"oauth_request": urlencode(query)},
            csrf_token=self.signer.csrf_token(cookie),
            error=pages.text(locale, error) if error else None,
            username=username,
            providers=self.providers(urlencode({"oauth_request": urlencode(query)})),
            password=self.password_login)
        return self.page(request, page, cookie, validated.redirect_uri, status)

    def csrf_ok(self, request: Request, form: dict[str, str]) -> bool:
        _, cookie = self.csrf(request)
        return cookie is not None and hmac.compare_digest(form.get("csrf_token", "").encode(),
                                                          self.signer.csrf_token(cookie).encode())

    async def login(self, request: Request, form: dict[str, str]) -> Response:
        query = parse_form(form.get("oauth_request", ""))
        username = form.get("username", "")[:64]
        if not self.password_login:
            return self.pages.error(request, "error.password_off", 403, query=query)
        if not self.csrf_ok(request, form):
            self.count("csrf_failed")
            return await self.show_login(request, query, error="csrf", username=username,
                                         status=403)
        outcome = await self.passwords.check(request, username, form.get("password", ""),
                                             before=lambda: self.validate(request, query))
        if outcome.response is not None:
            return outcome.response
        if outcome.error == "locked":
            locked = await self.show_login(request, query, error="locked", username=username,
                                           status=429)
            locked.headers["retry-after"] = str(outcome.retry_after)
            return locked
        validated = outcome.checked
        # every outcome but a refusal of the request's own carries the validated request
        if validated is None:
            raise RuntimeError("the sign-in was checked without its authorization request")
        if outcome.account is None:
            log.info("oauth.login_failed", client_id=validated.client.client_id)
            return await self.show_login(request, query, error="bad_credentials", username=username,
                                         status=401)
        cookie, _ = self.csrf(request)
        response = await self.consent_step(request, form.get("oauth_request", ""), query,
                                     validated=validated, account=outcome.account, cookie=cookie)
        self.passwords.device_cookie(response, username, outcome.device)
        return response

    async def consent_step(self, request: Request, request_text: str,
                           query: list[tuple[str, str]], *, validated: Authorization,
                           account: tuple[str, str], cookie: str) -> Response:
        """The consent page for a signed-in ``account`` (id, display name), however it signed in:
        what the client asks, what of it the account already allowed this client apart (a step-up
        asks only for more), and a way back to sign in as someone else."""
        account_id, account_name = account
        locale = self.pages.locale(request, query)
        # Purpose-bound, and bound to this request and this browser's CSRF cookie.
        ticket = self.signer.sign({"p": "consent", "a": account_id, "r": _fingerprint(request_text),
                                   "c": _fingerprint(cookie), "exp": int(time.time()) + TICKET_TTL})
        client_id, resource = validated.client.client_id, validated.resource
        granted = await self.transactions.run(
            lambda server: server.uow.repository(AccountRepository).granted_scopes(
                account_id, client_id, resource), write=False)
        asked = [(name, s.describe(locale)) for name in validated.scope.split()
                 if (s := self.config.catalog.get(name))]
        page = pages.consent_page(
            locale=locale, client_name=validated.client.display_name,
            client_host=validated.client.display_host,
            account_name=account_name, scopes=[s for s in asked if s[0] not in granted],
            granted=[s for s in asked if s[0] in granted], action="/authorize/consent",
            hidden={"oauth_request": request_text, "login_ticket": ticket},
            csrf_token=self.signer.csrf_token(cookie),
            switch=f"/authorize?{request_text}")
        return self.page(request, page, cookie, validated.redirect_uri)

    async def decide(self, request: Request, form: dict[str, str]) -> Response:
        request_text = form.get("oauth_request", "")
        query = parse_form(request_text)
        ticket = self.signer.unsign(form.get("login_ticket", ""))
        _, cookie = self.csrf(request)
        if (not self.csrf_ok(request, form) or ticket is None or ticket.get("p") != "consent"
                or ticket.get("r") != _fingerprint(request_text)
                or ticket.get("c") != _fingerprint(cookie or "")):
            return await self.show_login(request, query, error="csrf", status=403)
        validated = await self.validate(request, query)
        if isinstance(validated, Response):
            return validated
        approve = form.get("decision") == "approve"
        req = self.transactions.form_request(request, [], query, method="GET")

        def respond(server: OAuthServer) -> OAuthReply:
            user = server.enabled_account(ticket["a"]) if approve else None
            grant = server.get_consent_grant(req, end_user=user)
            return reply(server.create_authorization_response(req, grant_user=user, grant=grant))

        try:
            answer = await self.transactions.run(respond)
        except OAuth2Error as error:
            # the request turned invalid between the pages (client changed, say)
            return self.pages.refusal(request, _described(error), query=query)
        log.info("oauth.consent", approved=approve, subject=ticket["a"] if approve else None)
        return answer.response()


def _described(error: OAuth2Error) -> str:
    return error.get_error_description() or error.error or "invalid_request"


def _credentials(account: Any) -> tuple[str, str, str, bool] | None:
    # An account without a password (it signs in through its provider) is opened by none.
    if account is None or account.password_hash is None:
        return None
    return account.id, account.display_name, account.password_hash, account.disabled_at is None


def _verified(candidate: tuple[str, str, str, bool] | None,
              password: str) -> tuple[str, str] | None:
    """(id, display name) when the password matches an enabled account; as slow for unknown
    names."""
    if candidate is None:
        verify_password(password, DUMMY_HASH)
        return None
    account_id, name, stored, enabled = candidate
    return (account_id, name) if verify_password(password, stored) and enabled else None


def _fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]
