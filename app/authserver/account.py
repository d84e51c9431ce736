"""``/account``: the signed-in person's connected apps (the grants of their account), each with
Disconnect, sign-out, and the deletion of the account with everything kept for it.

Signing in here is the login page's (a provider's link, or the password form under the same limits);
what it leaves is a signed session cookie scoped to ``/account`` for ``SESSION_TTL``, checked
against the account on every request (a disabled account's session ends). Every form carries a CSRF
token: the sign-in form's is bound to a cookie of its own, a signed-in page's to the session cookie
(``session_csrf``).
Disconnect revokes the grant and its refresh tokens: its access tokens are refused at once by this
worker and within the revocation bound by every other (``docs/oauth.md``: pushed through Redis, else
APP_OAUTH_GRANT_CACHE_TTL).
"""

from __future__ import annotations

import enum
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

import structlog
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from app.authserver import pages
from app.authserver.accounts import AccountRepository, SignedIn, delete_account
from app.authserver.clients import Client
from app.authserver.forms import NO_STORE, Signer, parse_form, read_body
from app.authserver.pages import GrantView, Pages
from app.authserver.protocol import ServerConfig
from app.authserver.signin import PasswordSignIn, ProviderLinks
from app.db import Database

log = structlog.get_logger(__name__)
SESSION_COOKIE = "account_session"
ACCOUNT_CSRF = "account_csrf"
SESSION_TTL = 3600
NOTICES = {"disconnected": "account.disconnected", "signed_out": "account.signed_out",
           "deleted": "account.deleted"}


@dataclass(frozen=True, kw_only=True, eq=False)
class AccountPages:
    """``/account``: the sign-in form (or a provider's link), the connected apps, Disconnect, Sign
    out."""

    config: ServerConfig
    db: Database
    signer: Signer
    pages: Pages
    passwords: PasswordSignIn
    providers: ProviderLinks
    secure_cookies: bool
    password_login: bool
    # Deletes what every feature keeps for an account, in the unit of work that deletes it
    # (app.parts.forget_everywhere); returns how many items.
    forget: Callable[[Any, str], int]

    def routes(self) -> list[BaseRoute]:
        page = self.pages.guarded
        return [Route("/account", page(self.account), methods=["GET"]),
                Route("/account/login", page(self.account_login), methods=["POST"]),
                Route("/account/disconnect", page(self.disconnect), methods=["POST"]),
                Route("/account/sign-out", page(self.sign_out), methods=["POST"]),
                Route("/account/delete", page(self.delete), methods=["POST"])]

    # --- cookies ----------------------------------------------------------------------------------
    def account_csrf(self, request: Request) -> str:
        cookie = request.cookies.get(ACCOUNT_CSRF)
        return cookie if cookie and len(cookie) <= 100 else secrets.token_urlsafe(24)

    def account_csrf_ok(self, request: Request, form: dict[str, str]) -> bool:
        """The sign-in form's token: bound to the CSRF cookie (no session exists yet to bind it
        to)."""
        cookie = request.cookies.get(ACCOUNT_CSRF)
        return bool(cookie) and len(cookie or "") <= 100 and hmac.compare_digest(
            form.get("csrf_token", "").encode(), self.signer.csrf_token(cookie or "").encode())

    def session_csrf(self, request: Request) -> str:
        """The token of a signed-in page's forms (disconnect, sign out): an HMAC of the session
        cookie itself. A cookie and token of someone else's, planted beside the victim's session
        (cookie injection from a sibling host, which SameSite does not stop), match no session but
        their own."""
        return self.signer.csrf_token("session|" + request.cookies.get(SESSION_COOKIE, "")[:1024])

    def session_csrf_ok(self, request: Request, form: dict[str, str]) -> bool:
        return hmac.compare_digest(form.get("csrf_token", "").encode(),
                                   self.session_csrf(request).encode())

    def session_cookie(self, request: Request) -> tuple[str, int] | None:
        """(account id, session epoch) of a well-signed, unexpired session cookie; the account
        decides the rest."""
        payload = self.signer.unsign(request.cookies.get(SESSION_COOKIE, "")[:1024])
        if (payload and payload.get("p") == "session" and isinstance(payload.get("a"), str)
                and isinstance(payload.get("e"), int)):
            return payload["a"], payload["e"]
        return None

    def html(self, request: Request, page: pages.Page, csrf: str, status: int = 200) -> Response:
        response = self.pages.respond(request, page, status=status)
        response.set_cookie(ACCOUNT_CSRF, csrf, max_age=SESSION_TTL, path="/account", httponly=True,
                            secure=self.secure_cookies, samesite="lax")
        return response

    async def start_session(self, request: Request, signed: SignedIn) -> Response:
        epoch = await self.db.read(lambda uow: _epoch(uow, signed.account_id))
        response = RedirectResponse("/account", status_code=303, headers=NO_STORE)
        value = self.signer.sign({"p": "session", "a": signed.account_id, "e": epoch,
                                  "exp": int(time.time()) + SESSION_TTL})
        response.set_cookie(SESSION_COOKIE, value, max_age=SESSION_TTL, path="/account",
                            httponly=True, secure=self.secure_cookies, samesite="lax")
        # A fresh CSRF cookie with the session: a value planted before the sign-in (cookie injection
        # from a sibling host) does not carry over into it.
        response.set_cookie(ACCOUNT_CSRF, secrets.token_urlsafe(24), max_age=SESSION_TTL,
                            path="/account", httponly=True, secure=self.secure_cookies,
                            samesite="lax")
        return response

    def end_session(self, response: Response) -> Response:
        response.delete_cookie(SESSION_COOKIE, path="/account", httponly=True,
                               secure=self.secure_cookies, samesite="lax")
        return response

    # --- pages ------------------------------------------------------------------------------------
    def login_form(self, request: Request, *, error: str | None = None, username: str = "",
                   status: int = 200) -> Response:
        locale = self.pages.locale(request)
        csrf = self.account_csrf(request)
        notice = NOTICES.get(request.query_params.get("done", ""))
        message = (pages.text(locale, error) if error
                   else pages.text(locale, notice) if notice else None)
        page = pages.login_page(locale=locale, client_name=None, client_host="",
                                action="/account/login", hidden={},
                                csrf_token=self.signer.csrf_token(csrf), error=message,
                                username=username, providers=self.providers("next=account"),
                                password=self.password_login)
        return self.html(request, page, csrf, status)

    async def account(self, request: Request) -> Response:
        session = self.session_cookie(request)
        if session is None:
            return self.login_form(request)
        view = await self.db.read(lambda uow: _view(uow, *session))
        if view is SESSION_ENDED:  # signed out (here or elsewhere) since
            return self.end_session(self.login_form(request))
        if not isinstance(view, AccountView):  # gone, or disabled since: the session ends with it
            return self.end_session(self.login_form(request, error="account.disabled", status=403))
        locale = self.pages.locale(request)
        rows = [self.grant_view(grant, locale) for grant in view.grants]
        notice = NOTICES.get(request.query_params.get("done", ""))
        page = pages.account_page(locale=locale, account_name=view.name, grants=rows,
                                  csrf_token=self.session_csrf(request), deletable=view.deletable,
                                  notice=pages.text(locale, notice) if notice else None)
        return self.html(request, page, self.account_csrf(request))

    def grant_view(self, grant: ConnectedApp, locale: str) -> GrantView:
        # A client deleted since (a DCR client past its unused lifetime) is named by its id's host.
        fallback = urlsplit(grant.client_id).hostname
        client = grant.client
        return GrantView(id=grant.id,
                         client=client.display_name if client else fallback or grant.client_id,
                         host=client.display_host if client else fallback or "",
                         scopes=[(s, entry.describe(locale)) for s in grant.scope.split()
                                 if (entry := self.config.catalog.get(s))],
                         linked=_date(grant.created_at),
                         last_used=_date(grant.last_used_at) if grant.last_used_at else None)

    async def account_login(self, request: Request) -> Response:
        form = dict(parse_form(await read_body(request)))
        username = form.get("username", "")[:64]
        if not self.password_login:
            return self.pages.error(request, "error.password_off", 403)
        if not self.account_csrf_ok(request, form):
            return self.login_form(request, error="csrf", username=username, status=403)
        outcome = await self.passwords.check(request, username, form.get("password", ""))
        if outcome.error == "locked":
            locked = self.login_form(request, error="locked", username=username, status=429)
            locked.headers["retry-after"] = str(outcome.retry_after)
            return locked
        if outcome.account is None:
            return self.login_form(request, error="bad_credentials", username=username, status=401)
        account_id, name = outcome.account
        response = await self.start_session(request, SignedIn(account_id, name, True))
        self.passwords.device_cookie(response, username, outcome.device)
        return response

    async def signed_in_form(self, request: Request
                             ) -> tuple[dict[str, str], str, int] | Response:
        """A form posted in a session: its fields, the session's account and epoch; or the
        answer when there is no session (the sign-in page) or the token is not this session's."""
        form = dict(parse_form(await read_body(request)))
        session = self.session_cookie(request)
        if session is None:
            return self.login_form(request, status=401)
        if not self.session_csrf_ok(request, form):
            return self.pages.error(request, "csrf", 403)
        return form, *session

    async def disconnect(self, request: Request) -> Response:
        posted = await self.signed_in_form(request)
        if isinstance(posted, Response):
            return posted
        form, account_id, epoch = posted
        grant_id = form.get("grant", "")[:40]

        def revoke(uow: Any) -> bool | None:
            if _live(uow, account_id, epoch) is None:
                return None
            return uow.repository(AccountRepository).revoke_grant(account_id, grant_id,
                                                                  int(time.time()))

        ended = await self.db.write(revoke)
        if ended is None:
            return self.end_session(self.login_form(request, status=401))
        if not ended:
            return self.pages.error(request, "error.not_connected", 404)
        log.info("oauth.grant_disconnected", subject=account_id, grant=grant_id)
        return RedirectResponse("/account?done=disconnected", status_code=303, headers=NO_STORE)

    async def delete(self, request: Request) -> Response:
        """The account, its grants (their tokens refused at once here and within the revocation
        bound everywhere, as Disconnect's) and everything the features keep for it, in one
        transaction: all of it goes, or nothing does."""
        posted = await self.signed_in_form(request)
        if isinstance(posted, Response):
            return posted
        form, account_id, epoch = posted
        if form.get("confirm") != pages.DELETE_CONFIRMATION:
            return self.pages.error(request, "error.delete_unconfirmed", 400)

        def delete(uow: Any) -> int | None | Literal[False]:
            account = _live(uow, account_id, epoch)
            if account is None:
                return None
            if account.is_demo:  # its password is everyone's: nobody's to delete
                return False
            return delete_account(uow, account_id, self.forget)

        deleted = await self.db.write(delete)
        if deleted is None:
            return self.end_session(self.login_form(request, status=401))
        if deleted is False:
            return self.pages.error(request, "error.demo_undeletable", 403)
        log.info("account.deleted", subject=account_id, items=deleted)
        return self.end_session(RedirectResponse("/account?done=deleted", status_code=303,
                                                 headers=NO_STORE))

    async def sign_out(self, request: Request) -> Response:
        form = dict(parse_form(await read_body(request)))
        session = self.session_cookie(request)
        if session is None:
            # nothing to sign out of (expired, or signed out already): the sign-in page
            return self.end_session(RedirectResponse("/account", status_code=303, headers=NO_STORE))
        if not self.session_csrf_ok(request, form):
            return self.pages.error(request, "csrf", 403)
        # Every session of the account ends, not only this browser's copy of the cookie.
        await self.db.write(lambda uow: _end_sessions(uow, *session))
        return self.end_session(RedirectResponse("/account?done=signed_out", status_code=303,
                                                 headers=NO_STORE))


def _epoch(uow: Any, account_id: str) -> int:
    account = uow.repository(AccountRepository).get(account_id)
    return account.session_epoch if account is not None else 0


def _live(uow: Any, account_id: str, epoch: int) -> Any:
    """The account of a session still in force: enabled, and not signed out since the session
    began."""
    account = uow.repository(AccountRepository).get(account_id)
    if account is None or account.disabled_at is not None or account.session_epoch != epoch:
        return None
    return account


def _end_sessions(uow: Any, account_id: str, epoch: int) -> None:
    account = _live(uow, account_id, epoch)
    if account is not None:
        account.session_epoch = epoch + 1


@dataclass(frozen=True)
class ConnectedApp:
    """A grant of the account, read for its page: its client (None: deleted since)."""

    id: str
    client_id: str
    client: Client | None
    scope: str
    created_at: int
    last_used_at: int | None


@dataclass(frozen=True)
class AccountView:
    name: str
    grants: list[ConnectedApp]
    deletable: bool  # not a demo account, whose password is shared


class SessionEnded(enum.Enum):
    """The session's account signed out (here or elsewhere) after it began."""

    SESSION_ENDED = "ended"


SESSION_ENDED = SessionEnded.SESSION_ENDED


def _view(uow: Any, account_id: str, epoch: int) -> AccountView | SessionEnded | None:
    """What the page shows; None for an account gone or disabled."""
    accounts = uow.repository(AccountRepository)
    account = accounts.get(account_id)
    if account is None or account.disabled_at is not None:
        return None
    if account.session_epoch != epoch:
        return SESSION_ENDED
    return AccountView(account.display_name, [
        ConnectedApp(g.id, g.client_id, Client.from_row(c) if c is not None else None, g.scope,
                     g.created_at, g.last_used_at) for g, c in accounts.active_grants(account_id)],
        deletable=not account.is_demo)


def _date(epoch: int) -> str:
    # UTC, to the hour's minute: the last use is only kept to the hour anyway.
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")
