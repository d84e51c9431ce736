"""Sign-in through an upstream OpenID Connect provider: ``GET /login/<id>`` sends the browser there,
``GET /login/<id>/callback`` brings it back with a code; the account of (issuer, ``sub``) then goes
on to our own consent page (an authorization request) or to ``/account``.

What the round trip must come back with (``state``, ``nonce``, the PKCE verifier, the authorization
request) travels in a signed cookie scoped to the callback's path, so any replica can finish what
another started, and a callback in a browser that did not start the sign-in (login CSRF) finds no
cookie to match.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass

import structlog
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from app.authserver.account import AccountPages
from app.authserver.accounts import account_for_identity
from app.authserver.forms import NO_STORE, Signer, no_nul, parse_form
from app.authserver.pages import Pages
from app.authserver.signin import SignInCounter, SignInPages
from app.authserver.upstream import Flow, NotAllowed, UpstreamError, UpstreamProvider
from app.db import Database

log = structlog.get_logger(__name__)
FLOW_COOKIE = "oidc_flow"
FLOW_TTL = 600
# Browsers drop a cookie over 4 KB without a word: a longer authorization request is refused up
# front.
MAX_COOKIE = 3800
PURPOSES = ("authorize", "account")


@dataclass(frozen=True, kw_only=True, eq=False)
class UpstreamSignIn:
    """The two routes; a sign-in that comes back goes on to ``authorize``'s consent page, or to
    ``account``."""

    db: Database
    signer: Signer
    pages: Pages
    upstream: Mapping[str, UpstreamProvider]
    authorize: SignInPages
    account: AccountPages
    count: SignInCounter
    secure_cookies: bool

    def routes(self) -> list[BaseRoute]:
        if not self.upstream:
            return []
        return [Route("/login/{provider}", self.pages.guarded(self.start), methods=["GET"]),
                Route("/login/{provider}/callback", self.pages.guarded(self.callback),
                      methods=["GET"])]

    def failed(self, request: Request, provider: UpstreamProvider, key: str, status: int,
               query: list[tuple[str, str]] | None = None) -> Response:
        return self.pages.error(request, key, status, query=query, provider=provider.name)

    async def start(self, request: Request) -> Response:
        provider = self.upstream.get(request.path_params["provider"])
        if provider is None:
            return self.pages.error(request, "error.no_provider", 404)
        query = dict(no_nul(list(request.query_params.multi_items())))
        # the request to come back to: its ui_locales
        authorization: list[tuple[str, str]] | None = None
        if "oauth_request" in query:
            purpose, request_text = "authorize", query["oauth_request"]
            authorization = parse_form(request_text)
            validated = await self.authorize.validate(request, authorization)
            if isinstance(validated, Response):
                return validated
        elif query.get("next") == "account":
            purpose, request_text = "account", ""
        else:
            return self.pages.error(request, "error.start_from_sign_in")
        try:
            found = await provider.discovery()
        except UpstreamError as exc:
            log.warning("oauth.upstream_unavailable", provider=provider.id, reason=str(exc))
            return self.failed(request, provider, "upstream.unavailable", 503, authorization)
        flow = Flow(state=secrets.token_urlsafe(24), nonce=secrets.token_urlsafe(24),
                    verifier=secrets.token_urlsafe(48))
        cookie = self.signer.sign({"p": "upstream", "i": provider.id, "s": flow.state,
                                   "n": flow.nonce, "v": flow.verifier, "t": purpose,
                                   "r": request_text, "exp": int(time.time()) + FLOW_TTL})
        if len(cookie) > MAX_COOKIE:
            return self.pages.error(request, "error.request_too_long", query=authorization)
        response = RedirectResponse(provider.authorization_url(found, flow), status_code=303,
                                    headers={"referrer-policy": "no-referrer", **NO_STORE})
        response.set_cookie(FLOW_COOKIE, cookie, max_age=FLOW_TTL,
                            path=f"/login/{provider.id}/callback",
                            httponly=True, secure=self.secure_cookies, samesite="lax")
        return response

    async def callback(self, request: Request) -> Response:
        provider = self.upstream.get(request.path_params["provider"])
        if provider is None:
            return self.pages.error(request, "error.no_provider", 404)
        response = await self.finish(request, provider)
        # Single use, whatever happened: a reload cannot replay the code or the flow.
        response.delete_cookie(FLOW_COOKIE, path=f"/login/{provider.id}/callback", httponly=True,
                               secure=self.secure_cookies, samesite="lax")
        return response

    async def finish(self, request: Request, provider: UpstreamProvider) -> Response:
        params = dict(no_nul(list(request.query_params.multi_items())))
        flow_data = self.signer.unsign(request.cookies.get(FLOW_COOKIE, "")[:4096])
        state = params.get("state", "")
        if (flow_data is None or flow_data.get("p") != "upstream"
                or flow_data.get("i") != provider.id
                or flow_data.get("t") not in PURPOSES
                or not hmac.compare_digest(state.encode(), str(flow_data.get("s", "")).encode())):
            self.count("upstream_failed")
            return self.failed(request, provider, "upstream.expired", 400)
        flow = Flow(state=flow_data["s"], nonce=flow_data["n"], verifier=flow_data["v"])
        if "error" in params:  # the person cancelled, or the provider refused
            log.info("oauth.upstream_refused", provider=provider.id, error=params["error"][:64])
            self.count("upstream_failed")
            return self.failed(request, provider, "upstream.failed", 400)
        try:
            found = await provider.discovery()
            # RFC 9207 (mix-up defence): the response names this issuer, and must when the provider
            # says it does.
            if ("iss" in params or found.iss_parameter) and params.get("iss") != found.issuer:
                raise UpstreamError("the authorization response names another issuer, or none")
            if not params.get("code"):
                raise UpstreamError("the authorization response has no code")
            tokens = await provider.redeem(found, params["code"], flow)
            identity = await provider.identity(found, tokens, flow)
        except NotAllowed as exc:
            log.info("oauth.upstream_not_admitted", provider=provider.id)
            self.count("upstream_refused")
            return self.pages.refusal(request, str(exc), 403)
        except UpstreamError as exc:
            log.warning("oauth.upstream_failed", provider=provider.id, reason=str(exc))
            self.count("upstream_failed")
            return self.failed(request, provider, "upstream.failed", 502)
        except Exception:  # an answer of the provider's no check foresaw: its page, not a 500
            log.exception("oauth.upstream_failed", provider=provider.id, reason="unexpected")
            self.count("upstream_failed")
            return self.failed(request, provider, "upstream.failed", 502)
        signed = await self.db.write(lambda uow: account_for_identity(uow, identity))
        if not signed.enabled:
            self.count("upstream_refused")
            return self.pages.error(request, "account.disabled", 403)
        self.count("upstream_success")
        log.info("oauth.upstream_sign_in", provider=provider.id, subject=signed.account_id)
        if flow_data["t"] == "account":
            return await self.account.start_session(request, signed)
        request_text = str(flow_data.get("r", ""))
        query = parse_form(request_text)
        # the client may have changed meanwhile
        validated = await self.authorize.validate(request, query)
        if isinstance(validated, Response):
            return validated
        # The consent form posts to /authorize/consent, where this browser's CSRF cookie is sent: a
        # fresh one.
        return await self.authorize.consent_step(
            request, request_text, query, validated=validated,
            account=(signed.account_id, signed.display_name), cookie=secrets.token_urlsafe(24))

