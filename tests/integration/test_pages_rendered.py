"""Every text/html answer of the app comes from a template (autoescaped: ``app/http/templates.py``),
and what a client or the operator wrote shows on it as text.

Starlette's test client records the template a ``TemplateResponse`` was rendered from (its
``http.response.debug`` hook). This walks every route of the app, each method, with no input and
with a malformed one, and the pages of a sign-in from start to finish (login, a wrong password,
consent, /account, its errors, a provider that cannot be reached, the host emulator): each HTML
answer must name its template, and between them they must use every page template there is. The
client's name (from its registration) and the provider's name (from the settings) are hostile
throughout, and every page but the emulator's (this server's own script) must come out inert
(``tests/unit/test_page_xss.py`` puts such values in every slot)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from html import unescape
from importlib.resources import files
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from starlette.routing import BaseRoute, Mount, Route
from starlette.testclient import TestClient

from app.authserver.settings import AuthServerSettings
from app.main import create_app
from app.settings import load_part
from tests.e2e.linking_steps import PASSWORD
from tests.inert import assert_inert

pytestmark = pytest.mark.authserver

UNREACHABLE_PROVIDER = "http://127.0.0.1:9"  # the discard port: nothing answers
CLIENT_NAME = ("""Pages<script>alert(1)</script>"><img src=x onerror=alert(2)>'"""
               """ javascript:alert(3)""")
PROVIDER_NAME = """Corp<script>alert(4)</script>"' onfocus=alert(5)"""


def _routes(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, set[str]]]:
    for route in routes:
        if isinstance(route, Mount):
            yield from _routes(list(route.routes), prefix + route.path)
        elif isinstance(route, Route):
            yield (prefix + re.sub(r"\{[^}]+\}", "x", route.path),
                   set(route.methods or {"GET"}) - {"HEAD"})


def _templates() -> set[str]:
    """The page templates of the app (the layout and the macros render none by themselves)."""
    found = {path.name for package in ("app.authserver", "app.http", "app.directory")
             for path in Path(str(files(package) / "templates")).glob("*.html")}
    return found - {"base.html", "parts.html"}


class Recorder:
    def __init__(self, http: TestClient) -> None:
        self.http = http
        self.pages: list[tuple[str, str, httpx.Response]] = []

    def __call__(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        response = self.http.request(method, path, **kwargs)  # type: ignore[arg-type]
        if response.headers.get("content-type", "").startswith("text/html"):
            self.pages.append((method, path, response))
        return response


@pytest.fixture
def app(settings, tmp_path):
    own = load_part(AuthServerSettings, _env_file=None, oidc_providers=json.dumps([
        {"id": "corp", "name": PROVIDER_NAME, "issuer": UNREACHABLE_PROVIDER, "client_id": "rp"}]))
    return create_app(settings.model_copy(update={"var_dir": str(tmp_path),
                                                  "outbound_allowlist": ["127.0.0.1:9"]}),
                      parts=[own])


def _form(html: str, action: str) -> dict[str, str]:
    form = re.search(rf'<form method="post" action="{re.escape(action)}">(.*?)</form>', html, re.S)
    assert form is not None, html
    return {unescape(name): unescape(value)
            for name, value in re.findall(r'name="([^"]+)" value="([^"]*)"', form.group(1))}


def _sign_in_flow(call: Recorder) -> None:
    registered = call("POST", "/register", json={
        "client_name": CLIENT_NAME, "redirect_uris": ["https://c.example/cb"],
        "token_endpoint_auth_method": "none",
        "client_uri": "javascript:alert(6)", "logo_uri": "javascript:alert(7)"})
    assert registered.status_code == 201, registered.text
    client_id, verifier = registered.json()["client_id"], "v" * 43
    challenge = base64.urlsafe_b64encode(
        hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {"response_type": "code", "client_id": client_id,
             "redirect_uri": "https://c.example/cb",
             "code_challenge": challenge, "code_challenge_method": "S256", "state": "s"}
    login = call("GET", "/authorize", params=query)
    assert login.status_code == 200
    assert_inert(login.text, [CLIENT_NAME, f"Continue with {PROVIDER_NAME}"])
    fields = _form(login.text, "/authorize")
    assert call("POST", "/authorize",
                data={**fields, "username": "alice", "password": "wrong"}).status_code == 401
    consent = call("POST", "/authorize", data={**fields, "username": "alice", "password": PASSWORD})
    assert consent.status_code == 200 and 'value="approve"' in consent.text
    assert_inert(consent.text, [CLIENT_NAME])
    decided = call("POST", "/authorize/consent", data={**_form(consent.text, "/authorize/consent"),
                                                       "decision": "approve"})
    assert decided.status_code == 302
    code = parse_qs(urlsplit(decided.headers["location"]).query)["code"][0]
    token = call("POST", "/token", data={"grant_type": "authorization_code", "code": code,
                                         "client_id": client_id,
                                         "redirect_uri": "https://c.example/cb",
                                         "code_verifier": verifier})
    assert token.status_code == 200, token.text  # the grant /account lists
    # an unknown client: the error page
    call("GET", "/authorize", params={**query, "client_id": "dcr_nobody"})
    # A value authlib may not echo in an error (a quote, a non-ASCII letter): a page, not a 500.
    for odd in ({"redirect_uri": 'https://c.example/cb"'},
                {"response_type": "cod\u00e9", "ui_locales": "fr"}):
        malformed = call("GET", "/authorize", params={**query, **odd})
        assert malformed.status_code == 400
        assert ("mal formée" if "ui_locales" in odd else "is malformed") in malformed.text
    call("POST", "/authorize", content=b"a=" + b"b" * (1 << 20),  # a form over the cap: its page
         headers={"content-type": "application/x-www-form-urlencoded"})

    account_login = call("GET", "/account")
    signed_in = call("POST", "/account/login", data={**_form(account_login.text, "/account/login"),
                                                     "username": "alice", "password": PASSWORD})
    assert signed_in.status_code == 303
    account = call("GET", "/account")
    assert_inert(account.text, [CLIENT_NAME])
    # 403: its page
    call("POST", "/account/disconnect", data={"csrf_token": "forged", "grant": "g"})
    disconnect = _form(account.text, "/account/disconnect")
    # not connected: its page
    call("POST", "/account/disconnect", data={**disconnect, "grant": "grt_none"})
    # the provider cannot be reached
    unreachable = call("GET", "/login/corp", params={"next": "account"})
    assert_inert(unreachable.text, [f"Signing in with {PROVIDER_NAME} is unavailable"])
    # no flow cookie: its page
    call("GET", "/login/corp/callback", params={"state": "s", "code": "c"})
    call("GET", "/dev/host")


def test_every_html_answer_of_the_app_is_rendered_from_a_template(app):
    with TestClient(app, base_url="http://127.0.0.1:8000", raise_server_exceptions=False,
                    follow_redirects=False) as http:
        call = Recorder(http)
        for path, methods in _routes(list(app.routes) if hasattr(app, "routes")
                                     else _inner_routes(app)):
            for method in sorted(methods):
                call(method, path)
                if method == "POST":
                    call(method, path, content=b"%zz=\x00&&=",
                         headers={"content-type": "application/x-www-form-urlencoded"})
        _sign_in_flow(call)
    untemplated = [f"{method} {path} -> {response.status_code}"
                   for method, path, response in call.pages
                   if getattr(response, "template", None) is None]
    assert untemplated == []
    for _, path, response in call.pages:
        if path != "/dev/host":
            assert_inert(response.text, [])
    used = {response.template.name for _, _, response in call.pages}  # type: ignore[attr-defined]
    assert used == _templates()


def _inner_routes(app: object) -> list[BaseRoute]:
    """The router under the app's middleware (pure ASGI wrappers, each holding the next as
    ``app``)."""
    while not hasattr(app, "routes"):
        app = app.app
    return list(app.routes)  # type: ignore[attr-defined]
