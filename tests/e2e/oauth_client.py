"""A headless ChatGPT-like OAuth client: it reads the metadata, registers (CIMD, DCR or a
pre-registered id), walks the login and consent pages like a browser, and redeems the
code with PKCE, the way ChatGPT's connector does."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from joserfc import jwt
from joserfc.jwk import ECKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.wording import assert_readable

CHATGPT_REDIRECT = "https://chatgpt.com/connector_platform_oauth_redirect"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def new(cls) -> Pkce:
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        return cls(verifier, challenge)


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"action": a.get("action"), "fields": {}, "buttons": []})
        elif tag == "input" and self.forms and a.get("name"):
            self.forms[-1]["fields"][a["name"]] = a.get("value") or ""
        elif tag == "button" and self.forms and a.get("name"):
            self.forms[-1]["buttons"].append((a["name"], a.get("value")))


def only_form(html: str) -> dict[str, Any]:
    parser = _Forms()
    parser.feed(html)
    assert len(parser.forms) == 1, html
    return parser.forms[0]


def query_of(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


@dataclass
class Browser:
    """A user agent with a cookie jar that does not follow redirects (the last one goes to the client)."""

    base_url: str
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.base_url, follow_redirects=False, timeout=15)

    def open_authorize(self, params: dict[str, str]) -> httpx.Response:
        return self.http.get("/authorize", params=params, headers={"accept-language": "en"})

    def sign_in(self, params: dict[str, str], username: str, password: str, decision: str = "approve") -> str:
        """Authorize -> login -> consent; returns the Location of the final redirect to the client."""
        page = self.open_authorize(params)
        assert page.status_code == 200, page.text
        login = only_form(page.text)
        consent_page = self.http.post(login["action"], data={**login["fields"], "username": username,
                                                               "password": password})
        assert consent_page.status_code == 200, consent_page.text
        consent = only_form(consent_page.text)
        done = self.http.post(consent["action"], data={**consent["fields"], "decision": decision})
        assert done.status_code == 302, done.text
        return done.headers["location"]


def authorize_params(client_id: str, pkce: Pkce, resource: str, *, scope: str = "recipes.write search.read",
                     redirect_uri: str = CHATGPT_REDIRECT, state: str | None = None) -> dict[str, str]:
    return {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "scope": scope,
            "state": state or secrets.token_urlsafe(8), "code_challenge": pkce.challenge,
            "code_challenge_method": "S256", "resource": resource}


@dataclass
class ClientSite:
    """What ChatGPT publishes for CIMD: the client document and its JWKS (served on loopback by a test)."""

    key: ECKey = field(default_factory=lambda: ECKey.generate_key("P-256", private=True))
    kid: str = "site-key-1"
    base_url: str = ""
    document_path: str = "/oauth/client.json"
    overrides: dict[str, Any] = field(default_factory=dict)
    # Key sets a test publishes for a client of its own, at /oauth/keys/<name>.json (a jwks_uri).
    key_sets: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def client_id(self) -> str:
        return f"{self.base_url}{self.document_path}"

    def document(self) -> dict[str, Any]:
        return {"client_id": self.client_id, "client_name": "ChatGPT", "redirect_uris": [CHATGPT_REDIRECT],
                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                "token_endpoint_auth_method": "private_key_jwt", "jwks_uri": f"{self.base_url}/oauth/jwks.json",
                **self.overrides}

    def app(self) -> Starlette:
        async def document(request: Request) -> JSONResponse:
            doc = self.document()
            doc["client_id"] = doc["client_id"].replace(self.document_path, request.url.path)
            if request.url.path.endswith("/wrong-id.json"):
                doc["client_id"] = "https://chatgpt.com/oauth/someone-else.json"
            return JSONResponse(doc, headers={"cache-control": "max-age=300"})

        async def jwks(_: Request) -> JSONResponse:
            return JSONResponse({"keys": [{**self.key.as_dict(private=False), "kid": self.kid, "alg": "ES256",
                                           "use": "sig"}]})

        async def key_set(request: Request) -> JSONResponse:
            found = self.key_sets.get(request.path_params["name"])
            return JSONResponse(found if found is not None else {"error": "not found"},
                                status_code=200 if found is not None else 404)

        return Starlette(routes=[Route("/oauth/jwks.json", jwks), Route("/oauth/keys/{name}.json", key_set),
                                 Route("/oauth/{name}.json", document)])

    def assertion(self, audience: str, *, client_id: str | None = None, jti: str | None = None,
                  key: ECKey | None = None, kid: str | None = None, exp_in: int = 60) -> str:
        now = int(time.time())
        cid = client_id or self.client_id
        claims = {"iss": cid, "sub": cid, "aud": audience, "iat": now, "exp": now + exp_in,
                  "jti": jti or secrets.token_urlsafe(12)}
        return jwt.encode({"alg": "ES256", "kid": kid or self.kid}, claims, key or self.key)


def token(base_url: str, data: dict[str, str], auth: tuple[str, str] | None = None) -> httpx.Response:
    return httpx.post(f"{base_url}/token", data=data, auth=auth, timeout=15)


def code_grant(code: str, pkce: Pkce, resource: str, client_id: str | None = None,
               redirect_uri: str = CHATGPT_REDIRECT) -> dict[str, str]:
    data = {"grant_type": "authorization_code", "code": code, "code_verifier": pkce.verifier,
            "redirect_uri": redirect_uri, "resource": resource}
    if client_id:
        data["client_id"] = client_id
    return data


def with_assertion(data: dict[str, str], assertion: str) -> dict[str, str]:
    return {**data, "client_assertion_type": ASSERTION_TYPE, "client_assertion": assertion}


def call_tool(mcp_url: str, name: str, arguments: dict[str, Any] | None = None, token: str | None = None,
              meta: dict[str, Any] | None = None) -> httpx.Response:
    """A tools/call; ``meta`` is its request _meta (``tests.challenges.CHATGPT_META``: as ChatGPT sends it)."""
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}, **({"_meta": meta} if meta else {})}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = httpx.post(mcp_url, json=body, headers=headers, timeout=15)
    if response.status_code == 200 and "json" in response.headers.get("content-type", ""):
        assert_readable(response.json().get("result"))
    return response


def encode(params: dict[str, str]) -> str:
    return urlencode(params)
