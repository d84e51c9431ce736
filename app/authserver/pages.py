"""The authorization server's own pages: login, consent and error, server-rendered.

Plain HTML with one inline ``<style>``: no JavaScript, no external assets, so the
responses can carry a strict Content-Security-Policy (``PAGE_CSP`` / ``page_csp``).
Localized in ``LANGUAGES``; ``negotiate`` picks one from OAuth ``ui_locales`` and
``Accept-Language``. Every interpolated value is HTML-escaped here: client names and
hosts come from untrusted client metadata documents.

Form-action and redirects: Chrome and Safari check ``form-action`` against the
redirect a form submission answers with, not only against the form's ``action``
(w3c/webappsec-csp#8). A login or consent POST that ends in a redirect to the
client's ``redirect_uri`` is blocked by ``form-action 'self'`` alone, so serve those
pages with ``page_csp(redirect_uri)``, which adds that redirect's origin.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from urllib.parse import urlsplit

from app.authserver.catalog import CATALOG
from app.i18n import lookup

__all__ = [
    "CATALOG",
    "LANGUAGES",
    "LOGIN_ERRORS",
    "PAGE_CSP",
    "RESERVED_FIELDS",
    "account_page",
    "consent_page",
    "error_page",
    "login_page",
    "negotiate",
    "page_csp",
    "text",
]

LANGUAGES = ("en", "es", "fr", "pt", "zh")

PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

# Error code -> catalog key (the same name): ``text(locale, LOGIN_ERRORS["csrf"])`` or ``text(locale, "csrf")``.
LOGIN_ERRORS: Mapping[str, str] = {"bad_credentials": "bad_credentials", "csrf": "csrf", "locked": "locked"}

# Names the pages' own fields use: a ``hidden`` entry with one of these would be submitted twice
# (a smuggled ``decision=approve`` before the button's ``deny``), so it is refused.
RESERVED_FIELDS = frozenset({"csrf_token", "username", "password", "decision"})

# The value of <html lang>: the strings below are Simplified Chinese and Brazilian Portuguese.
_HTML_LANG = {"en": "en", "es": "es", "fr": "fr", "pt": "pt-BR", "zh": "zh-Hans"}

_CSS = """\
:root{color-scheme:light dark;--bg:#f3f4f6;--card:#fff;--fg:#16181d;--muted:#4b5260;--border:#6b7280;\
--line:#d9dce1;--accent:#0b57d0;--on-accent:#fff;--focus:#0b57d0;--err-fg:#a4161a;--err-bg:#fdecec;--code-bg:#eef0f3}
@media (prefers-color-scheme:dark){:root{--bg:#0f1114;--card:#1b1e23;--fg:#eceef1;--muted:#b7bcc5;\
--border:#8c939e;--line:#343a42;--accent:#8ab4f8;--on-accent:#0a1b36;--focus:#8ab4f8;--err-fg:#ffb4ab;\
--err-bg:#3d1513;--code-bg:#2a2f36}}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;min-height:100vh;display:flex;align-items:flex-start;justify-content:center;padding:2rem 1rem;\
background:var(--bg);color:var(--fg);font:1rem/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",\
"PingFang SC","Hiragino Sans GB","Microsoft YaHei","Noto Sans CJK SC",sans-serif}
main{width:100%;max-width:28rem;min-width:0;background:var(--card);border:1px solid var(--line);\
border-radius:12px;padding:1.5rem 1.25rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 1rem}
p,ul{margin:0 0 1rem}
ul{padding-left:1.25rem}
li+li{margin-top:.5rem}
bdi,.scope,.message{overflow-wrap:anywhere}
.muted{color:var(--muted)}
.error{padding:.75rem 1rem;border:1px solid var(--err-fg);border-left-width:4px;border-radius:8px;\
background:var(--err-bg);color:var(--err-fg)}
.field{margin:0 0 1rem}
label{display:block;font-weight:600;margin:0 0 .25rem}
input{display:block;width:100%;min-height:2.75rem;padding:.5rem .75rem;font:inherit;color:var(--fg);\
background:var(--card);border:1px solid var(--border);border-radius:8px}
input[aria-invalid=true]{border:2px solid var(--err-fg)}
small{display:block;font-size:.875rem;color:var(--muted)}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--code-bg);\
padding:0 .25rem;border-radius:4px;overflow-wrap:anywhere}
.actions{display:flex;flex-wrap:wrap;gap:.75rem;margin-top:1.5rem}
button{flex:1 1 8rem;min-height:2.75rem;padding:.5rem 1rem;font:inherit;font-weight:600;color:var(--fg);\
background:transparent;border:2px solid var(--border);border-radius:8px;cursor:pointer}
button.primary{color:var(--on-accent);background:var(--accent);border-color:var(--accent)}
a.provider{display:flex;align-items:center;justify-content:center;min-height:2.75rem;margin:0 0 .75rem;\
padding:.5rem 1rem;font-weight:600;color:var(--fg);text-decoration:none;border:2px solid var(--border);\
border-radius:8px}
.or{text-align:center;color:var(--muted);margin:1rem 0}
.grant{border-top:1px solid var(--line);padding-top:1rem;margin-top:1rem}
.grant h2{font-size:1.125rem;margin:0 0 .25rem}
:focus-visible,input:focus{outline:3px solid var(--focus);outline-offset:2px}
"""

_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[0-9]{1,5})?")


def _e(value: object) -> str:
    """HTML-escape text for element content and double-quoted attribute values."""
    return escape(str(value), quote=True)


def _normalize(locale: str) -> str:
    return locale if locale in CATALOG else lookup(locale, LANGUAGES)


def _by_quality(accept_language: str) -> list[str]:
    """Accept-Language ranges, highest q first (ties keep header order); q=0 and malformed q dropped."""
    ranked: list[tuple[float, str]] = []
    for item in accept_language[:4096].split(","):
        tag, _, params = item.partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0
        if tag.strip() and 0.0 < quality <= 1.0:
            ranked.append((quality, tag.strip()))
    ranked.sort(key=lambda pair: -pair[0])
    return [tag for _, tag in ranked]


def negotiate(ui_locales: str | None, accept_language: str | None) -> str:
    """The page language: OAuth ``ui_locales`` (space-separated, in order) first, then Accept-Language, then en."""
    if ui_locales:
        found = lookup(ui_locales.split(), LANGUAGES, default="")
        if found:
            return found
    if accept_language:
        return lookup(_by_quality(accept_language), LANGUAGES)
    return "en"


def text(locale: str, key: str, **fmt: object) -> str:
    """The catalog string (plain text, NOT escaped), in ``locale`` or else English; KeyError for an unknown key."""
    template = CATALOG[_normalize(locale)].get(key) or CATALOG["en"][key]
    return template.format(**fmt) if fmt else template


def _markup(locale: str, key: str, **html_fragments: str) -> str:
    """A catalog string as HTML: the template is escaped, the fragments (already safe HTML) are inserted."""
    template = CATALOG[_normalize(locale)].get(key) or CATALOG["en"][key]
    return _e(template).format(**html_fragments)


def page_csp(redirect_uri: str | None = None) -> str:
    """``PAGE_CSP``, with ``redirect_uri``'s origin added to ``form-action`` (see the module docstring).

    Use it for the login and consent pages, whose submissions can end in a redirect to the client.
    A URI whose origin cannot be written as a CSP source adds its scheme only (``cursor:``, ``http:``).
    """
    if not redirect_uri:
        return PAGE_CSP
    parts = urlsplit(redirect_uri.strip())
    scheme = parts.scheme.lower()
    if not _SCHEME.fullmatch(scheme):
        return PAGE_CSP
    netloc = parts.netloc.rpartition("@")[2].lower()
    source = f"{scheme}://{netloc}" if scheme in ("http", "https") and _HOST.fullmatch(netloc) else f"{scheme}:"
    return PAGE_CSP.replace("form-action 'self'", f"form-action 'self' {source}")


def _page(locale: str, title: str, body: str) -> str:
    return (
        "<!doctype html>\n"
        f'<html lang="{_HTML_LANG[locale]}" dir="ltr">\n'
        "<head>\n"
        '<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="robots" content="noindex, nofollow">\n'
        f"<title>{_e(title)}</title>\n"
        f"<style>\n{_CSS}</style>\n"
        "</head>\n"
        "<body>\n"
        f"<main>\n{body}</main>\n"
        "</body>\n"
        "</html>\n"
    )


def _hidden_inputs(hidden: Mapping[str, str], csrf_token: str) -> str:
    clash = sorted(RESERVED_FIELDS.intersection(hidden))
    if clash:
        raise ValueError(f"hidden fields may not use the page's own field names: {', '.join(clash)}")
    fields: Iterable[tuple[str, str]] = [("csrf_token", csrf_token), *hidden.items()]
    return "".join(f'<input type="hidden" name="{_e(name)}" value="{_e(value)}">\n' for name, value in fields)


def _client(client_name: str | None, client_host: str) -> dict[str, str]:
    # <bdi>: an untrusted name cannot reorder the sentence around it with bidi controls.
    return {"client": f"<strong><bdi>{_e(client_name)}</bdi></strong>", "host": f"<bdi>{_e(client_host)}</bdi>"}


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
) -> str:
    """The sign-in page: a link per upstream provider (name, URL of its start) and the password form (unless
    ``password`` is false). ``client_name`` None: the account page's sign-in. ``error`` is already localized."""
    locale = _normalize(locale)
    invalid = ' aria-invalid="true" aria-describedby="login-error"' if error else ""
    alert = f'<p id="login-error" class="error" role="alert">{_e(error)}</p>\n' if error else ""
    intro = (_markup(locale, "login.intro", **_client(client_name, client_host)) if client_name is not None
             else _e(text(locale, "login.intro_account")))
    # Links, not forms: a form's redirect to the provider would need its origin in form-action (see the module
    # docstring); starting a sign-in is no more than opening /authorize is.
    links = "".join(f'<a class="provider" href="{_e(url)}">{_e(text(locale, "login.continue_with", provider=name))}'
                    "</a>\n" for name, url in providers)
    separator = f'<p class="or">{_e(text(locale, "login.or"))}</p>\n' if links and password else ""
    form = (
        f'<form method="post" action="{_e(action)}">\n'
        f"{_hidden_inputs(hidden, csrf_token)}"
        '<div class="field">\n'
        f'<label for="username">{_e(text(locale, "login.username"))}</label>\n'
        f'<input id="username" name="username" type="text" value="{_e(username)}" autocomplete="username"'
        f' autocapitalize="none" spellcheck="false" required autofocus{invalid}>\n'
        "</div>\n"
        '<div class="field">\n'
        f'<label for="password">{_e(text(locale, "login.password"))}</label>\n'
        f'<input id="password" name="password" type="password" autocomplete="current-password" required{invalid}>\n'
        "</div>\n"
        '<div class="actions">\n'
        f'<button type="submit" class="primary">{_e(text(locale, "login.submit"))}</button>\n'
        "</div>\n"
        "</form>\n"
    ) if password else ""
    body = (f"<h1>{_e(text(locale, 'login.heading'))}</h1>\n"
            f'<p class="muted">{intro}</p>\n{alert}{links}{separator}{form}')
    return _page(locale, text(locale, "login.title"), body)


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
) -> str:
    """Approve or deny: ``scopes`` are (name, localized description); none means identity only."""
    locale = _normalize(locale)
    account = f"<strong><bdi>{_e(account_name)}</bdi></strong>"
    if scopes:
        items = "".join(
            f'<li class="scope">{_e(description)} <small><code>{_e(name)}</code></small></li>\n'
            for name, description in scopes
        )
        grants = (
            f'<p id="scopes-label">{_e(text(locale, "consent.scopes"))}</p>\n'
            f'<ul aria-labelledby="scopes-label">\n{items}</ul>\n'
        )
    else:
        grants = f"<p>{_e(text(locale, 'consent.no_scopes'))}</p>\n"
    body = (
        f"<h1>{_e(text(locale, 'consent.heading'))}</h1>\n"
        f'<p>{_markup(locale, "consent.intro", account=account, **_client(client_name, client_host))}</p>\n'
        f"{grants}"
        f'<form method="post" action="{_e(action)}">\n'
        f"{_hidden_inputs(hidden, csrf_token)}"
        '<div class="actions">\n'
        f'<button type="submit" name="decision" value="deny">{_e(text(locale, "consent.deny"))}</button>\n'
        f'<button type="submit" name="decision" value="approve" class="primary">'
        f'{_e(text(locale, "consent.approve"))}</button>\n'
        "</div>\n"
        "</form>\n"
        f'<p class="muted">{_markup(locale, "consent.signed_in_as", account=f"<bdi>{_e(account_name)}</bdi>")}</p>\n'
    )
    return _page(locale, text(locale, "consent.title"), body)


def error_page(*, locale: str, message: str, message_lang: str | None = None) -> str:
    """A request that cannot go on. ``message`` is one sentence, maybe English from the OAuth library:
    pass ``message_lang="en"`` then, so screen readers read it in the right language."""
    locale = _normalize(locale)
    lang = f' lang="{_e(message_lang)}"' if message_lang else ""
    body = (
        f"<h1>{_e(text(locale, 'error.heading'))}</h1>\n"
        f'<p class="message"{lang}>{_e(message)}</p>\n'
        f'<p class="muted">{_e(text(locale, "error.retry"))}</p>\n'
    )
    return _page(locale, text(locale, "error.title"), body)


def account_page(*, locale: str, account_name: str, grants: Sequence[Mapping[str, object]], csrf_token: str,
                 notice: str | None = None) -> str:
    """The connected apps: each grant (``id``, ``client``, ``host``, ``scopes`` as (name, description),
    ``linked`` and ``last_used`` as dates or None) with its Disconnect button, and sign-out."""
    locale = _normalize(locale)
    account = f"<bdi>{_e(account_name)}</bdi>"
    status = f'<p class="message" role="status">{_e(notice)}</p>\n' if notice else ""
    items = []
    for grant in grants:
        scopes = grant["scopes"]
        can = "".join(f'<li class="scope">{_e(description)} <small><code>{_e(name)}</code></small></li>\n'
                      for name, description in scopes) if isinstance(scopes, list | tuple) else ""
        used = (text(locale, "account.last_used", date=grant["last_used"]) if grant.get("last_used")
                else text(locale, "account.never_used"))
        linked = text(locale, "account.linked", date=grant["linked"])
        items.append(
            '<section class="grant">\n'
            f'<h2><bdi>{_e(grant["client"])}</bdi></h2>\n'
            f'<p class="muted"><bdi>{_e(grant["host"])}</bdi> · {_e(linked)} · {_e(used)}</p>\n'
            + (f'<p>{_e(text(locale, "account.can"))}</p>\n<ul>\n{can}</ul>\n' if can else "")
            + '<form method="post" action="/account/disconnect">\n'
            f"{_hidden_inputs({'grant': str(grant['id'])}, csrf_token)}"
            f'<div class="actions"><button type="submit">{_e(text(locale, "account.disconnect"))}</button></div>\n'
            "</form>\n</section>\n")
    listed = "".join(items) or f"<p>{_e(text(locale, 'account.none'))}</p>\n"
    body = (
        f"<h1>{_e(text(locale, 'account.heading'))}</h1>\n"
        f'<p class="muted">{_markup(locale, "consent.signed_in_as", account=account)}</p>\n'
        f"{status}{listed}"
        '<form method="post" action="/account/sign-out">\n'
        f"{_hidden_inputs({}, csrf_token)}"
        f'<div class="actions"><button type="submit">{_e(text(locale, "account.sign_out"))}</button></div>\n'
        "</form>\n"
    )
    return _page(locale, text(locale, "account.title"), body)
