"""An account linked the way ChatGPT links one, for the benchmark's bearer cells: a client registered by DCR,
alice signed in and consenting on the server's own pages, the code exchanged with PKCE, the access token
renewed by the refresh grant when it is about to expire (the server's tokens live 5 to 15 minutes)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import httpx

REDIRECT = "https://chatgpt.com/connector_platform_oauth_redirect"
SCOPE = "recipes.write"  # implies recipes.read: every bearer cell's tool
USERNAME, PASSWORD = "alice", "demo-password"  # the demo account ./dev serve seeds


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"action": a.get("action"), "fields": {}})
        elif tag == "input" and self.forms and a.get("name"):
            self.forms[-1]["fields"][a["name"]] = a.get("value") or ""


def _form(page: httpx.Response) -> dict:
    if page.status_code != 200:
        raise RuntimeError(f"linking: {page.request.url.path} answered {page.status_code}: {page.text[:300]}")
    parser = _Forms()
    parser.feed(page.text)
    forms = [f for f in parser.forms if f["action"]]
    if not forms:
        raise RuntimeError(f"linking: no form on {page.request.url.path}")
    return forms[-1]  # the password form comes after any provider links, the consent page has one


@dataclass
class Link:
    base_url: str
    resource: str
    client_id: str = ""
    access_token: str = ""
    refresh_token: str = ""
    expires_at: float = 0.0
    http: httpx.Client = field(default_factory=lambda: httpx.Client(follow_redirects=False, timeout=30))

    def token(self) -> str:
        """A current access token (one more refresh when less than two minutes are left)."""
        if not self.access_token:
            self._link()
        elif time.monotonic() > self.expires_at - 120:
            self._issue({"grant_type": "refresh_token", "refresh_token": self.refresh_token,
                         "client_id": self.client_id})
        return self.access_token

    def _link(self) -> None:
        registered = self.http.post(f"{self.base_url}/register", json={
            "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "scope": SCOPE,
            "client_name": "bench"})
        if registered.status_code != 201:
            raise RuntimeError(f"linking: /register answered {registered.status_code}: {registered.text[:300]}")
        self.client_id = registered.json()["client_id"]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        params = {"response_type": "code", "client_id": self.client_id, "redirect_uri": REDIRECT, "scope": SCOPE,
                  "state": secrets.token_urlsafe(8), "code_challenge": challenge, "code_challenge_method": "S256",
                  "resource": self.resource}
        login = _form(self.http.get(f"{self.base_url}/authorize", params=params))
        consent = _form(self.http.post(self.base_url + login["action"], data={
            **login["fields"], "username": USERNAME, "password": PASSWORD}))
        done = self.http.post(self.base_url + consent["action"], data={**consent["fields"], "decision": "approve"})
        if done.status_code != 302:
            raise RuntimeError(f"linking: consent answered {done.status_code}: {done.text[:300]}")
        code = parse_qs(urlsplit(done.headers["location"]).query)["code"][0]
        self._issue({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                     "code_verifier": verifier, "client_id": self.client_id, "resource": self.resource})

    def _issue(self, form: dict[str, str]) -> None:
        issued = self.http.post(f"{self.base_url}/token", data=form)
        if issued.status_code != 200:
            raise RuntimeError(f"linking: /token answered {issued.status_code}: {issued.text[:300]}")
        body = issued.json()
        self.access_token, self.refresh_token = body["access_token"], body["refresh_token"]
        self.expires_at = time.monotonic() + int(body["expires_in"])
