"""A token for ``python -m app listing``'s linked test cases, got as ChatGPT gets one: the
server's metadata, a client registered for the purpose (DCR, a loopback redirect that is never
followed), the sign-in and consent pages walked with an account's name and password, the code
redeemed with PKCE. Over HTTP, so it works against any server running this authorization server
(in process through Starlette's TestClient, which is an httpx client too)."""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx

from app.authserver.settings import AuthServerSettings
from app.command import OperatorError
from app.settings import Settings, load_part

# The replay's client: registered once per run, never redirected to (the code is read from the
# Location header). Loopback http is what this server allows for native clients.
REDIRECT = "http://127.0.0.1/listing-replay"
CLIENT_NAME = "Listing replay (python -m app listing)"
PASSWORD_VARIABLE = "LISTING_PASSWORD"
DEMO_ACCOUNT = "alice"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class SignInRefused(OperatorError):
    """The replay's account could not be linked; the message says at which step and why."""


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []
        self.alerts: list[str] = []
        self._alert = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self.forms.append({"action": found.get("action") or "", "fields": {}})
        elif tag == "input" and self.forms and found.get("name"):
            self.forms[-1]["fields"][found["name"]] = found.get("value") or ""
        # The login page's error (role=alert), the error page's message (class=message).
        self._alert = (found.get("role") == "alert" or "message" in (found.get("class") or "")
                       or self._alert)

    def handle_endtag(self, tag: str) -> None:
        self._alert = False if tag in ("p", "div") else self._alert

    def handle_data(self, data: str) -> None:
        if self._alert and data.strip():
            self.alerts.append(data.strip())


def _form(page: httpx.Response, step: str, password: str) -> dict[str, Any]:
    forms = _Forms()
    forms.feed(page.text)
    if page.status_code != 200 or len(forms.forms) != 1 or forms.alerts:
        # The page's own words, without the password should it echo it back.
        why = " ".join(forms.alerts)[:300].replace(password, "[hidden]")
        raise SignInRefused(f"{step}: {why or f'HTTP {page.status_code}'}")
    return forms.forms[0]


def credentials(settings: Settings, account: str | None, base_url: str) -> tuple[str, str]:
    """The account the replay signs in as, and its password: LISTING_PASSWORD's, or, for the
    demo account of a development server, the demo password this environment configures (sent
    only to this environment's own server, or one on loopback: never to any --url)."""
    password = os.environ.get(PASSWORD_VARIABLE)
    if password:
        return account or DEMO_ACCOUNT, password
    own = load_part(AuthServerSettings)
    if account not in (None, DEMO_ACCOUNT):
        raise SignInRefused(f"set {PASSWORD_VARIABLE} to the password of {account}")
    if base_url != settings.base_url and urlsplit(base_url).hostname not in LOOPBACK:
        raise SignInRefused(f"{base_url} is not this environment's server: give a test "
                            f"account with --account NAME and its password in {PASSWORD_VARIABLE}")
    if settings.production and not own.allow_demo_accounts:
        raise SignInRefused(f"production has no demo account: give a test account with --account "
                            f"NAME and its password in {PASSWORD_VARIABLE}")
    return DEMO_ACCOUNT, own.demo_password


def sign_in(http: httpx.Client, base_url: str, resource: str, scope: str, username: str,
            password: str) -> str:
    """An access token for ``username`` on ``resource`` with ``scope``, from the authorization
    server at ``base_url``."""
    metadata = http.get(f"{base_url}/.well-known/oauth-authorization-server")
    if metadata.status_code != 200:
        raise SignInRefused(f"no authorization server metadata at {base_url} "
                            f"(HTTP {metadata.status_code})")
    endpoints = _json(metadata, "the authorization server's metadata")
    if str(endpoints.get("issuer", "")).rstrip("/") != base_url.rstrip("/"):  # RFC 8414 §3.3
        raise SignInRefused(f"the metadata at {base_url} is another issuer's")
    # The password and the code go to this server only: an endpoint or a form that points
    # elsewhere (another host, plain http where the server is https) is refused, not followed.
    for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        if endpoints.get(key) is not None:
            endpoints[key] = _same_origin(str(endpoints[key]), base_url, key)
    if not endpoints.get("authorization_endpoint") or not endpoints.get("token_endpoint"):
        raise SignInRefused(f"the metadata at {base_url} names no authorization and token "
                            "endpoints")
    if not endpoints.get("registration_endpoint"):
        raise SignInRefused("the authorization server registers no clients (APP_OAUTH_DCR=false): "
                            "give a token in LISTING_TOKEN instead")
    registered = http.post(endpoints["registration_endpoint"], json={
        "client_name": CLIENT_NAME, "redirect_uris": [REDIRECT], "scope": scope,
        "token_endpoint_auth_method": "none", "grant_types": ["authorization_code"],
        "response_types": ["code"]})
    if registered.status_code != 201:
        raise SignInRefused(f"client registration: HTTP {registered.status_code}")
    client_id = _json(registered, "client registration").get("client_id")
    if not isinstance(client_id, str):
        raise SignInRefused("client registration: the answer holds no client_id")
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    state = secrets.token_urlsafe(12)
    login = http.get(endpoints["authorization_endpoint"], headers={"accept-language": "en"},
                     params={"response_type": "code", "client_id": client_id,
                             "redirect_uri": REDIRECT, "scope": scope, "state": state,
                             "code_challenge": challenge.decode().rstrip("="),
                             "code_challenge_method": "S256", "resource": resource})
    form = _form(login, "the sign-in page", password)
    consent = http.post(_same_origin(urljoin(str(login.url), form["action"]), base_url,
                                     "the sign-in form"), data={
        **form["fields"], "username": username, "password": password})
    form = _form(consent, f"signing in as {username}", password)
    done = http.post(_same_origin(urljoin(str(consent.url), form["action"]), base_url,
                                  "the consent form"),
                     data={**form["fields"], "decision": "approve"})
    query = parse_qs(urlsplit(done.headers.get("location", "")).query)
    if done.status_code != 302 or query.get("state") != [state] or "code" not in query:
        raise SignInRefused(f"consent: no code came back (HTTP {done.status_code})")
    token = http.post(endpoints["token_endpoint"], data={
        "grant_type": "authorization_code", "code": query["code"][0], "client_id": client_id,
        "code_verifier": verifier, "redirect_uri": REDIRECT, "resource": resource})
    issued = _json(token, "token") if token.status_code == 200 else {}
    if not isinstance(issued.get("access_token"), str):
        raise SignInRefused(f"token: HTTP {token.status_code}, no access token")
    return issued["access_token"]


def _json(response: httpx.Response, what: str) -> dict[str, Any]:
    try:
        found = response.json()
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise SignInRefused(f"{what}: the answer is not a JSON object "
                            f"(HTTP {response.status_code})")
    return found


def _same_origin(url: str, base_url: str, what: str) -> str:
    """``url`` when it is on ``base_url``'s origin (scheme, host, port)."""
    wanted, found = urlsplit(base_url), urlsplit(url)
    if (found.scheme, found.netloc) != (wanted.scheme, wanted.netloc):
        raise SignInRefused(f"{what} points at {found.scheme}://{found.netloc}, not at "
                            f"{wanted.scheme}://{wanted.netloc}: the password stays unsent")
    return url
