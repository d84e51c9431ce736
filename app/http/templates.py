"""HTML from Jinja2 templates, autoescaped: how this server writes every text/html response.

Every value a template prints is escaped unless it is markup a template made itself (a macro's
output, a ``{% set %}`` block), so a client's name, a host, a scope description or a provider's
claim shows as text on the pages where people type passwords, whatever it holds. Autoescape
does not make a URL safe in ``href``: the ``url`` filter turns any URL that is neither relative
nor http(s) (``javascript:``, ``data:``) into ``about:invalid``.

Responses are Starlette's ``TemplateResponse``: under its test client each one carries the
template and context it was rendered from (``tests/integration/test_pages_rendered.py`` holds
every HTML answer of the app to that).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.templating import Jinja2Templates

__all__ = ["safe_url", "templates"]

SAFE_SCHEMES = ("http", "https")


def safe_url(url: object) -> str:
    """``url`` when a browser would only navigate with it (relative, http, https); else
    ``about:invalid``."""
    text = str(url)
    # Browsers strip C0 controls and spaces around a URL and drop tabs and newlines in its scheme
    # (java\tscript:); urlsplit strips the leading ones only from Python 3.11.4 on: done here.
    if any(c in text for c in "\t\n\r"):
        return "about:invalid"
    try:
        scheme = urlsplit(text.strip("".join(map(chr, range(0x21))))).scheme.lower()
    except ValueError:
        return "about:invalid"
    return "about:invalid" if scheme and scheme not in SAFE_SCHEMES else text


def templates(package: str, folder: str = "templates") -> Jinja2Templates:
    """The templates in ``package``'s ``folder``: autoescaped (every template is HTML), an unknown
    name an error rather than an empty string, read once (they ship in the wheel: no reload check
    per page)."""
    environment = Environment(loader=PackageLoader(package, folder), autoescape=True,
                              undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True, auto_reload=False)
    environment.filters["url"] = safe_url
    return Jinja2Templates(env=environment)
