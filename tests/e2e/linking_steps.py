"""Steps the OAuth e2e tests share: register a client, sign in, link, refresh, read the database,
and assert an OAuth refusal. All over real HTTP against the ``linking`` server (tests/e2e/conftest.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from tests.e2e.conftest import Linking
from tests.e2e.oauth_client import CHATGPT_REDIRECT, Browser, Pkce, authorize_params, code_grant, query_of, token

PASSWORD = "demo-password"


def sql(linking: Linking, statement: str, **params: Any) -> list[Any]:
    engine = create_engine(linking.server.database_url)
    try:
        with engine.begin() as conn:
            result = conn.execute(text(statement), params)
            return list(result) if result.returns_rows else []
    finally:
        engine.dispose()


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def register(linking: Linking, **metadata: Any) -> dict[str, Any]:
    body = {"redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "none", **metadata}
    response = httpx.post(f"{linking.base_url}/register", json=body, timeout=15)
    assert response.status_code == 201, response.text
    return response.json()


def public_client(linking: Linking, scope: str = "recipes.write") -> str:
    return register(linking, scope=scope)["client_id"]


def signed_in_code(linking: Linking, client_id: str, pkce: Pkce, scope: str = "recipes.write", username: str = "alice",
          password: str = PASSWORD) -> str:
    params = authorize_params(client_id, pkce, linking.resource, scope=scope)
    return query_of(Browser(linking.base_url).sign_in(params, username, password))["code"]


def linked(linking: Linking, scope: str = "recipes.write", username: str = "alice",
            password: str = PASSWORD) -> tuple[str, dict[str, Any]]:
    client_id, pkce = public_client(linking, scope), Pkce.new()
    code = signed_in_code(linking, client_id, pkce, scope, username, password)
    response = token(linking.base_url, code_grant(code, pkce, linking.resource, client_id=client_id))
    assert response.status_code == 200, response.text
    return client_id, response.json()


def grant_of(access_token: str) -> str:
    """The grant an access token of ours was issued under (its ``grant`` claim; not verified here)."""
    payload = access_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["grant"]


def refused_within(seconds: float, status: Callable[[], int]) -> float:
    """Call ``status`` until it answers 401, at most ``seconds``: how long it took (a revocation made in another
    process reaches a server's cached grant state within that bound)."""
    started = time.monotonic()
    while (answered := status()) != 401:
        assert answered == 200, answered
        assert time.monotonic() - started < seconds, f"still {answered} after {seconds} s"
        time.sleep(0.05)
    return time.monotonic() - started


def refresh(linking: Linking, client_id: str, refresh_token: str, **extra: str) -> httpx.Response:
    return token(linking.base_url, {"grant_type": "refresh_token", "refresh_token": refresh_token,
                                    "client_id": client_id, **extra})


def refused(response: httpx.Response, error: str, status: int = 400) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error, body
    assert "access_token" not in body and "refresh_token" not in body


def redirected_error(response: httpx.Response, linking: Linking, error: str, state: str) -> None:
    assert response.status_code == 302, response.text
    location = response.headers["location"]
    callback = query_of(location)
    assert location.startswith(CHATGPT_REDIRECT)
    assert callback["error"] == error and "code" not in callback
    assert callback["iss"] == linking.base_url
    assert callback["state"] == state


def cimd_code(linking: Linking) -> tuple[str, Pkce]:
    """A code for the CIMD client (the test's loopback chatgpt.com), signed in as alice."""
    pkce = Pkce.new()
    params = authorize_params(linking.site.client_id, pkce, linking.resource)
    return query_of(Browser(linking.base_url).sign_in(params, "alice", PASSWORD))["code"], pkce
