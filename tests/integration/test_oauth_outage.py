"""The authorization server and the token check during a database outage: 503 and a clear
answer everywhere, never a 500, and never a 401 that would make a client drop a good token."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from starlette.testclient import TestClient

from app.db import Database
from app.main import create_app

pytestmark = pytest.mark.authserver

UNREACHABLE = "postgresql+psycopg://nobody@127.0.0.1:1/none"  # port 1 refuses at once


@dataclass
class Outage:
    http: TestClient
    var_dir: Path
    base_url: str


@pytest.fixture
def outage(settings, tmp_path) -> Outage:
    db = Database(UNREACHABLE, connect_timeout=1)
    app = create_app(settings.model_copy(update={"var_dir": str(tmp_path)}), db=db)
    with TestClient(app, base_url=settings.base_url, raise_server_exceptions=False) as http:
        yield Outage(http, tmp_path, settings.base_url)


def test_the_token_endpoint_says_temporarily_unavailable(outage: Outage):
    response = outage.http.post("/token", data={"grant_type": "refresh_token", "refresh_token": "rt_x",
                                                "client_id": "dcr_x"})
    assert response.status_code == 503
    assert response.json()["error"] == "temporarily_unavailable" and response.headers["retry-after"] == "5"


def test_registration_says_temporarily_unavailable(outage: Outage):
    response = outage.http.post("/register", json={"redirect_uris": ["https://chatgpt.com/cb"]})
    assert response.status_code == 503 and response.json()["error"] == "temporarily_unavailable"


def test_the_authorization_page_says_the_service_is_unavailable(outage: Outage):
    response = outage.http.get("/authorize", params={"response_type": "code", "client_id": "dcr_x"})
    assert response.status_code == 503 and "unavailable" in response.text and "<h1>" in response.text


def test_a_well_signed_bearer_token_on_mcp_gets_503_not_401(outage: Outage):
    # Signed with the server's own key: only the revocation lookup (the database) stands in the way.
    jwks = json.loads((outage.var_dir / "oauth-signing-keys.json").read_text())
    key = KeySet.import_key_set(jwks).keys[0]
    now = int(time.time())
    claims = {"iss": outage.base_url, "sub": "acct_x", "aud": f"{outage.base_url}/mcp", "client_id": "c",
              "scope": "", "iat": now, "exp": now + 300, "grant": "grt_x"}
    token = jwt.encode({"alg": "ES256", "kid": jwks["keys"][0]["kid"], "typ": "at+jwt"}, claims, key)
    response = outage.http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={
        "authorization": f"Bearer {token}", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18"})
    assert response.status_code == 503 and response.json()["error"] == "temporarily_unavailable"


def test_the_upstream_sign_in_and_the_account_page_say_the_service_is_unavailable(settings, tmp_path):
    from app.authserver.settings import AuthServerSettings
    from app.settings import load_part

    own = load_part(AuthServerSettings, _env_file=None, oidc_providers=json.dumps([
        {"id": "corp", "name": "Corp", "issuer": "https://login.corp.example", "client_id": "x"}]))
    app = create_app(settings.model_copy(update={"var_dir": str(tmp_path)}),
                     db=Database(UNREACHABLE, connect_timeout=1), parts=[own])
    with TestClient(app, base_url=settings.base_url, raise_server_exceptions=False) as http:
        start = http.get("/login/corp", params={"oauth_request": "response_type=code&client_id=dcr_x"})
        assert start.status_code == 503 and "unavailable" in start.text and "<h1>" in start.text
        page = http.get("/account")  # no session: the sign-in page, which needs no database
        assert page.status_code == 200
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
        login = http.post("/account/login", data={"csrf_token": csrf, "username": "alice", "password": "x" * 8})
        assert login.status_code == 503 and "unavailable" in login.text
