"""The directory's pages: ``/.well-known/openai-apps-challenge`` (the domain verification token),
``/privacy`` and ``/terms``, in the language asked for (``?lang=``, else Accept-Language)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from app.directory.catalog import CATALOG, HTML_LANG, LANGUAGES
from app.http.templates import templates
from app.i18n import by_quality, lookup
from app.settings import Settings

CHALLENGE_PATH = "/.well-known/openai-apps-challenge"
# Plain HTML and one style element: nothing to load, nothing to run, never framed.
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
PAGES = templates("app.directory")


def language(request: Request) -> str:
    """``?lang=`` when it names one of ``LANGUAGES`` (a link to one version), else the best of
    Accept-Language, else English."""
    asked = request.query_params.get("lang", "")
    if asked and (found := lookup([asked], LANGUAGES, default="")):
        return found
    return lookup(by_quality(request.headers.get("accept-language", "")), LANGUAGES)


def directory_routes(settings: Settings, kept: Sequence[Mapping[str, str]],
                     traced: bool = False) -> list[Route]:
    """The three routes. ``kept``: what each installed part keeps about a person (its sentences
    by language), for the privacy page; ``traced``: whether traces leave for a collector."""

    async def verify(_: Request) -> PlainTextResponse:
        token = settings.openai_apps_challenge
        if token is None:
            return PlainTextResponse("Not Found", status_code=404)
        # Read once by the platform when it checks: never from a cache that outlived a new token.
        return PlainTextResponse(token, headers={"cache-control": "no-store"})

    def page(name: str, external: str | None):
        async def endpoint(request: Request) -> Response:
            if external is not None:  # the operator's own page
                return RedirectResponse(external, status_code=302)
            locale = language(request)
            strings = CATALOG[locale]
            app_name = settings.server_title
            given = settings.operator_name
            values = {
                "app": app_name,
                "origin": urlsplit(settings.base_url).netloc,
                "operator": given or strings["the_operator"].format(app=app_name),
                # At a sentence's start: the default phrase capitalised, a name as it is written.
                "Operator": given or strings["The_operator"].format(app=app_name),
                "contact": settings.operator_contact or strings["no_contact"],
                "jurisdiction": settings.operator_jurisdiction or "",
            }
            context = {"lang": locale, "html_lang": HTML_LANG[locale], "t": strings, "v": values,
                       # (its language, the sentence): English where a part lacks the page's.
                       "kept": [(found, said[found])
                                for said in kept for found in [lookup([locale], said)]],
                       "traced": traced,
                       "contact_href": _contact_href(settings.operator_contact),
                       "privacy_href": f"/privacy?lang={locale}",
                       "languages": LANGUAGES, "here": name}
            response = PAGES.TemplateResponse(request, f"{name}.html", context)
            response.headers.update({
                "content-security-policy": PAGE_CSP, "content-language": HTML_LANG[locale],
                "vary": "accept-language", "cache-control": "public, max-age=300",
                "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"})
            return response

        return endpoint

    return [Route(CHALLENGE_PATH, verify, methods=["GET"]),
            Route("/privacy", page("privacy", settings.privacy_url), methods=["GET"]),
            Route("/terms", page("terms", settings.terms_url), methods=["GET"])]


def _contact_href(contact: str | None) -> str | None:
    if contact is None:
        return None
    # The setting holds an https URL (in any case) or an email address (app.settings).
    return contact if urlsplit(contact).scheme == "https" else f"mailto:{contact}"
