"""Hostile values in every slot of every page come out inert: shown as text, never as markup, a
script, an event handler or a ``javascript:`` link. Values reach the pages from client metadata
(name, host), an upstream provider's claims (the account's name or e-mail), the operator's settings
(a provider's name, a scope's description) and libraries (an error's description); the templates
escape all of them (``app/http/templates.py``), and the ``url`` filter keeps links to http(s) and
relative URLs."""

from __future__ import annotations

import pytest

from app.authserver import pages
from app.authserver.pages import GrantView, Pages
from app.http.templates import safe_url
from tests.inert import Elements, assert_inert

pytestmark = pytest.mark.authserver

PAYLOADS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(1)' x='",
    '<a href="javascript:alert(1)">click</a>',
    "javascript:alert(1)",
    "{{ 7 * 7 }} {client} %s",  # neither a template nor a placeholder once it is a value
    "\u202eevil\u202c <b>bold</b> & &amp;",
)
def every_page(value: str) -> list[tuple[pages.Page, list[str]]]:
    """Each page with ``value`` in every slot it has, and the slots a person reads it in."""
    grant = GrantView(id=value, client=value, host=value, scopes=[(value, value)], linked=value,
                      last_used=value)
    return [
        (pages.login_page(locale="en", client_name=value, client_host=value, action=value,
                          hidden={"oauth_request": value, value: value}, csrf_token=value,
                          error=value, username=value,
                          providers=[(value, value), ("Corp", "javascript:alert(1)")]), [value]),
        (pages.login_page(locale="fr", client_name=None, client_host="", action="/account/login",
                          hidden={}, csrf_token=value,
                          providers=[(value, f"/login/corp?{value}")]), [value]),
        (pages.consent_page(locale="zh", client_name=value, client_host=value, account_name=value,
                            scopes=[(value, value)], action=value, hidden={"login_ticket": value},
                            csrf_token=value), [value]),
        (pages.error_page(locale="es", message=value, message_lang="en"), [value]),
        (pages.account_page(locale="pt", account_name=value, grants=[grant, grant],
                            csrf_token=value, notice=value), [value]),
    ]


@pytest.mark.parametrize("value", PAYLOADS)
def test_a_hostile_value_in_every_slot_of_every_page_is_inert_text(value):
    renderer = Pages()
    for page, shown in every_page(value):
        assert_inert(renderer.render(page), shown)


def test_the_hostile_values_are_the_attributes_values_exactly():
    page = Pages().render(pages.login_page(locale="en", client_name="c", client_host="h",
                                           action=PAYLOADS[1], hidden={"state": PAYLOADS[2]},
                                           csrf_token="t", username=PAYLOADS[1]))
    doc = Elements()
    doc.feed(page)
    attrs = {a.get("name") or tag: a for tag, a in doc.tags}
    assert attrs["form"]["action"] == PAYLOADS[1] and attrs["state"]["value"] == PAYLOADS[2]
    assert attrs["username"]["value"] == PAYLOADS[1]


@pytest.mark.parametrize(("url", "kept"), [
    ("/login/corp?next=account", True), ("https://idp.example/a?b=c", True),
    ("http://127.0.0.1:9/x", True),
    ("relative/path", True), ("javascript:alert(1)", False), (" JavaScript:alert(1)", False),
    ("java\tscript:alert(1)", False), ("\x01javascript:alert(1)", False),
    ("\x00 javascript:x", False), ("data:text/html,<script>", False), ("vbscript:x", False),
    ("cursor://anysphere/cb", False), ("http://[::1", False),
])
def test_links_keep_to_http_and_relative_urls(url, kept):
    assert (safe_url(url) == url) is kept and (kept or safe_url(url) == "about:invalid")
