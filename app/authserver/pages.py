"""The authorization server's own pages: sign-in, consent, error and /account, from the Jinja2
templates in ``app/authserver/templates`` (autoescaped: ``app/http/templates.py``).

A builder here (``login_page``, ``consent_page``, ``error_page``, ``account_page``) checks what it
is given and returns a ``Page``: the template's name and its context. ``Pages`` renders one, or
answers with it under this server's headers (a strict Content-Security-Policy: the pages hold no
script and load nothing; no framing; no caching). Localized in ``LANGUAGES``: ``negotiate`` picks
one from OAuth ``ui_locales`` and ``Accept-Language``, and the templates' ``t`` reads the catalog
(``catalog.py``) in it.

Form-action and redirects: Chrome and Safari check ``form-action`` against the redirect a form
submission answers with, not only against the form's ``action`` (w3c/webappsec-csp#8). A login or
consent POST that ends in a redirect to the client's ``redirect_uri`` is blocked by
``form-action 'self'`` alone, so those pages are served with ``page_csp(redirect_uri)``, which adds
that redirect's origin.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response

from app.authserver.catalog import CATALOG
from app.authserver.forms import NO_STORE, BodyTooLarge, MalformedRequest
from app.db import DatabaseNotMigrated, DatabaseUnavailable
from app.http.templates import templates
from app.i18n import by_quality, lookup
from app.limits import LimitsUnavailable

__all__ = [
    "CATALOG",
    "LANGUAGES",
    "LOGIN_ERRORS",
    "PAGE_CSP",
    "RESERVED_FIELDS",
    "GrantView",
    "Page",
    "Pages",
    "account_page",
    "consent_page",
    "error_page",
    "login_page",
    "negotiate",
    "page_csp",
    "text",
]

LANGUAGES = ("en", "es", "fr", "pt", "zh")

PAGE_CSP = ("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
            "frame-ancestors 'none'; base-uri 'none'")

# Error code -> catalog key (the same name): ``text(locale, LOGIN_ERRORS["csrf"])`` or
# ``text(locale, "csrf")``.
LOGIN_ERRORS: Mapping[str, str] = {"bad_credentials": "bad_credentials", "csrf": "csrf",
                                   "locked": "locked"}

# Names the pages' own fields use: a ``hidden`` entry with one of these would be submitted twice
# (a smuggled ``decision=approve`` before the button's ``deny``), so it is refused.
RESERVED_FIELDS = frozenset({"csrf_token", "username", "password", "decision"})

# The html element's lang: the catalog's strings are Simplified Chinese and Brazilian Portuguese.
_HTML_LANG = {"en": "en", "es": "es", "fr": "fr", "pt": "pt-BR", "zh": "zh-Hans"}


@dataclass(frozen=True)
class Page:
    """A page to render: its template and what the template reads (``locale`` among it)."""

    template: str
    context: Mapping[str, Any]


@dataclass(frozen=True)
class GrantView:
    """A connected app as ``/account`` lists it: the grant's id, the client's name and host, what it
    may do ((scope, description) pairs), when it was linked and last used (display dates; None:
    never used)."""

    id: str
    client: str
    host: str
    scopes: Sequence[tuple[str, str]]
    linked: str
    last_used: str | None


Endpoint = Callable[[Request], Awaitable[Response]]


class Pages:
    """Renders the pages (the environment is built once, with the server), and answers a browser's
    request that cannot go on with the error page."""

    def __init__(self) -> None:
        self.templates = templates("app.authserver")
        self.templates.env.globals["t"] = _t

    def locale(self, request: Request, query: list[tuple[str, str]] | None = None) -> str:
        """The page language: ``ui_locales`` of the authorization request ``query``, else the
        browser's."""
        return negotiate(dict(query or []).get("ui_locales"),
                         request.headers.get("accept-language"))

    def error(self, request: Request, key: str, status: int = 400,
              headers: Mapping[str, str] | None = None, *,
              query: list[tuple[str, str]] | None = None, **fmt: object) -> Response:
        """The error page saying the catalog's ``key``, in the language of the authorization request
        ``query`` if there is one, else the browser's."""
        locale = self.locale(request, query)
        page = error_page(locale=locale, message=text(locale, key, **fmt))
        return self.respond(request, page, status=status, headers=headers)

    def refusal(self, request: Request, message: str, status: int = 400, *,
                query: list[tuple[str, str]] | None = None) -> Response:
        """The error page around ``message``, English from a library or a check (the OAuth library's
        error description, a client document's fault): marked English for screen readers."""
        page = error_page(locale=self.locale(request, query), message=message, message_lang="en")
        return self.respond(request, page, status=status)

    def guarded(self, endpoint: Endpoint) -> Endpoint:
        """A browser route whose failures (a malformed or oversized form, an outage) are pages,
        never JSON."""

        async def page(request: Request) -> Response:
            try:
                return await endpoint(request)
            except BodyTooLarge:
                return self.error(request, "error.form_too_large", 413)
            except MalformedRequest as exc:
                return self.refusal(request, str(exc))
            except (DatabaseUnavailable, DatabaseNotMigrated):
                return self.error(request, "error.unavailable", 503, {"retry-after": "5"})
            except LimitsUnavailable:
                # Sign-in fails closed: without the shared counts every replica would allow its own
                # share of guesses.
                return self.error(request, "error.unavailable", 503, {"retry-after": "30"})

        return page

    def render(self, page: Page) -> str:
        return self.templates.get_template(page.template).render(page.context)

    def respond(self, request: Request, page: Page, *, status: int = 200,
                redirect_uri: str | None = None,
                headers: Mapping[str, str] | None = None) -> Response:
        """``page`` under the pages' headers; ``redirect_uri``: where a form of it may end up
        (``page_csp``)."""
        return self.templates.TemplateResponse(
            request, page.template, dict(page.context), status_code=status,
            headers={"content-security-policy": page_csp(redirect_uri), "x-frame-options": "DENY",
                     "referrer-policy": "no-referrer", **NO_STORE, **(headers or {})})


@pass_context
def _t(context: Context, key: str, **fragments: object) -> Markup:
    """The catalog string ``key`` in the page's language, as markup: the string itself escaped, each
    fragment escaped unless it is markup a template made (a macro's output), then put in its
    placeholder."""
    template = CATALOG[context["locale"]].get(key) or CATALOG["en"][key]
    return escape(template).format(**fragments)


_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[0-9]{1,5})?")


def _normalize(locale: str) -> str:
    return locale if locale in CATALOG else lookup(locale, LANGUAGES)


def negotiate(ui_locales: str | None, accept_language: str | None) -> str:
    """The page language: OAuth ``ui_locales`` (space-separated, in order) first, then
    Accept-Language, then en."""
    if ui_locales:
        found = lookup(ui_locales.split(), LANGUAGES, default="")
        if found:
            return found
    if accept_language:
        return lookup(by_quality(accept_language), LANGUAGES)
    return "en"


def text(locale: str, key: str, **fmt: object) -> str:
    """The catalog string (plain text, NOT escaped), in ``locale`` or else English; KeyError for an
    unknown key."""
    template = CATALOG[_normalize(locale)].get(key) or CATALOG["en"][key]
    return template.format(**fmt) if fmt else template


def page_csp(redirect_uri: str | None = None) -> str:
    """``PAGE_CSP``, with ``redirect_uri``'s origin added to ``form-action`` (see the module
    docstring).

    Use it for the login and consent pages, whose submissions can end in a redirect to the client. A
    URI whose origin cannot be written as a CSP source adds its scheme only (``cursor:``,
    ``http:``).
    """
    if not redirect_uri:
        return PAGE_CSP
    parts = urlsplit(redirect_uri.strip())
    scheme = parts.scheme.lower()
    if not _SCHEME.fullmatch(scheme):
        return PAGE_CSP
    netloc = parts.netloc.rpartition("@")[2].lower()
    source = (f"{scheme}://{netloc}" if scheme in ("http", "https") and _HOST.fullmatch(netloc)
              else f"{scheme}:")
    return PAGE_CSP.replace("form-action 'self'", f"form-action 'self' {source}")


def _context(locale: str, **values: Any) -> dict[str, Any]:
    locale = _normalize(locale)
    return {"locale": locale, "html_lang": _HTML_LANG[locale], **values}


def _fields(hidden: Mapping[str, str], csrf_token: str) -> list[tuple[str, str]]:
    clash = sorted(RESERVED_FIELDS.intersection(hidden))
    if clash:
        raise ValueError("hidden fields may not use the page's own field names: "
                         f"{', '.join(clash)}")
    return [("csrf_token", csrf_token), *hidden.items()]


def login_page(
    *,
    locale: str,
    client_name: str | None,
    client_host: str,
    action: str,
    hidden: Mapping[str, str],
    csrf_token: str,
    error: str | None = None,
    username: str = "",
    providers: Sequence[tuple[str, str]] = (),
    password: bool = True,
) -> Page:
    """The sign-in page: a link per upstream provider (name, URL of its start) and the password form
    (unless ``password`` is false). ``client_name`` None: the account page's sign-in. ``error`` is
    already localized."""
    return Page("login.html", _context(locale, client_name=client_name, client_host=client_host,
                                       action=action, hidden=_fields(hidden, csrf_token),
                                       error=error, username=username, providers=list(providers),
                                       password=password))


def consent_page(
    *,
    locale: str,
    client_name: str,
    client_host: str,
    account_name: str,
    scopes: Sequence[tuple[str, str]],
    action: str,
    hidden: Mapping[str, str],
    csrf_token: str,
    granted: Sequence[tuple[str, str]] = (),
    switch: str | None = None,
) -> Page:
    """Approve or deny: ``scopes`` are (name, localized description) newly asked, ``granted``
    those the account already allowed this client (a step-up); neither means identity only.
    ``switch``: where "not you?" leads (the sign-in page of the same request)."""
    return Page("consent.html", _context(locale, client_name=client_name, client_host=client_host,
                                         account_name=account_name, scopes=list(scopes),
                                         granted=list(granted), switch=switch,
                                         action=action, hidden=_fields(hidden, csrf_token)))


def error_page(*, locale: str, message: str, message_lang: str | None = None) -> Page:
    """A request that cannot go on. ``message`` is one sentence, maybe English from the OAuth
    library: pass ``message_lang="en"`` then, so screen readers read it in the right language."""
    return Page("error.html", _context(locale, message=message, message_lang=message_lang))


# The value of the box a person ticks to delete their account: a form without it deletes nothing.
DELETE_CONFIRMATION = "delete"


def account_page(*, locale: str, account_name: str, grants: Sequence[GrantView], csrf_token: str,
                 notice: str | None = None, deletable: bool = True) -> Page:
    """The connected apps, each with its Disconnect button, and sign-out; ``notice``: what just
    happened."""
    return Page("account.html", _context(locale, account_name=account_name, grants=list(grants),
                                         csrf_token=csrf_token, notice=notice,
                                         delete_confirmation=DELETE_CONFIRMATION,
                                         deletable=deletable))
