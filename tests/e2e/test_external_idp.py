"""External IdP mode end to end: the real server (``python -m app serve``) accepts the access tokens of an
identity provider it does not run, checked against the IdP's JWKS, and runs no authorization server itself.

The IdP is a tiny loopback app that publishes its JWKS and counts how often it is asked; the tests sign
tokens with its key as the IdP would."""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.auth.tokens import RemoteJwks
from app.main import create_app
from app.settings import load_settings
from tests.challenges import CHATGPT_META, assert_http_challenge, plain_call
from tests.e2e.fake_idp import EMAIL, NAME, SUBJECT, USERNAME, FakeIdp, new_key
from tests.e2e.oauth_client import call_tool
from tests.e2e.server import LiveServer
from tests.serving import serving

pytestmark = pytest.mark.demo("recipes")

CUSTOM_AUDIENCE = "api://recipes"
# How long the server waits after a JWKS fetch before an unknown kid may trigger another one.
MIN_REFRESH = inspect.signature(RemoteJwks.__init__).parameters["min_refresh"].default


@pytest.fixture(scope="module")
def idp() -> Iterator[FakeIdp]:
    fake = FakeIdp()
    with serving(lambda _: fake.app()) as base_url:
        fake.base_url = base_url
        yield fake


def _start(idp: FakeIdp, database_url: str, tmp: Path, **extra_env: str) -> LiveServer:
    return LiveServer(database_url, tmp / "server.log", extra_env={
        "APP_AUTH_MODE": "external",
        "APP_OAUTH_ISSUER": idp.base_url,
        "APP_OAUTH_JWKS_URL": idp.jwks_url,
        "APP_OUTBOUND_ALLOWLIST": idp.host_port,
        "APP_VAR_DIR": str(tmp / "var"),
        **extra_env,
    }).start()


@pytest.fixture(scope="module")
def server(idp: FakeIdp, database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live = _start(idp, database_url, tmp_path_factory.mktemp("external"))
    yield live
    live.stop()


def _result(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    body = response.json()
    assert "error" not in body, body
    return body["result"]


def _challenge_params(value: str) -> dict[str, str]:
    assert value.startswith("Bearer "), value
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', value))


def test_the_protected_resource_metadata_names_the_idp_as_the_authorization_server(server: LiveServer,
                                                                                     idp: FakeIdp):
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
        response = httpx.get(f"{server.base_url}{path}")
        assert response.status_code == 200, path
        prm = response.json()
        assert prm["resource"] == server.mcp_url
        assert prm["authorization_servers"] == [idp.base_url]  # byte for byte: no trailing slash
        assert {"recipes.read", "recipes.write"} <= set(prm["scopes_supported"])


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/.well-known/oauth-authorization-server"),
    ("GET", "/authorize"),
    ("POST", "/token"),
    ("POST", "/register"),
    ("GET", "/jwks.json"),
])
def test_the_builtin_authorization_server_endpoints_are_absent(server: LiveServer, method: str, path: str):
    assert httpx.request(method, f"{server.base_url}{path}").status_code == 404


def test_an_idp_token_opens_the_profile_and_the_saved_recipes_of_its_subject(server: LiveServer, idp: FakeIdp):
    access = idp.sign(server.mcp_url)
    profile = _result(call_tool(server.mcp_url, "get_account_profile", token=access))
    assert profile["isError"] is False, profile
    assert profile["structuredContent"] == {"id": SUBJECT, "name": NAME, "email": EMAIL,
                                            "nickname": USERNAME}

    saved = _result(call_tool(server.mcp_url, "save_recipe", {"title": "Idp lentil soup"}, token=access))
    assert saved["isError"] is False, saved
    listed = _result(call_tool(server.mcp_url, "list_saved_recipes", token=access))
    assert listed["isError"] is False, listed
    assert [r["title"] for r in listed["structuredContent"]["recipes"]] == ["Idp lentil soup"]


@pytest.mark.parametrize("case", ["wrong audience", "wrong issuer", "expired", "another key, same kid",
                                  "another key, unknown kid"])
def test_a_token_the_idp_did_not_issue_for_this_server_gets_401_invalid_token(server: LiveServer, idp: FakeIdp,
                                                                               case: str):
    now = int(time.time())
    access = {
        "wrong audience": lambda: idp.sign("https://elsewhere.example/mcp"),
        "wrong issuer": lambda: idp.sign(server.mcp_url, iss="https://other-idp.example"),
        "expired": lambda: idp.sign(server.mcp_url, iat=now - 900, exp=now - 120),
        "another key, same kid": lambda: idp.sign(server.mcp_url, key=new_key()),
        "another key, unknown kid": lambda: idp.sign(server.mcp_url, key=new_key(), kid="forged-kid"),
    }[case]()
    response = call_tool(server.mcp_url, "get_account_profile", token=access)
    assert response.status_code == 401, response.text
    assert response.json()["error"] == "invalid_token"
    challenge = _challenge_params(response.headers["www-authenticate"])
    assert challenge["error"] == "invalid_token"
    assert challenge["resource_metadata"] == f"{server.base_url}/.well-known/oauth-protected-resource/mcp"


def test_an_anonymous_call_to_an_oauth_tool_gets_a_challenge_naming_the_servers_metadata(server: LiveServer):
    result = _result(call_tool(server.mcp_url, "list_saved_recipes", meta=CHATGPT_META))
    assert result["isError"] is True and "structuredContent" not in result
    [value] = result["_meta"]["mcp/www_authenticate"]
    challenge = _challenge_params(value)
    assert challenge["resource_metadata"] == f"{server.base_url}/.well-known/oauth-protected-resource/mcp"
    assert challenge["scope"] == "recipes.read"
    assert challenge["error"] == "insufficient_scope"
    # Another client is sent, at HTTP level, to the same metadata (which names the IdP).
    assert_http_challenge(plain_call(server.mcp_url, "list_saved_recipes"), server.base_url, "recipes.read",
                          signed_in=False)


@pytest.fixture
def rotating_idp() -> Iterator[FakeIdp]:
    """An IdP of its own: rotating the shared one would pull the key from under the other tests."""
    fake = FakeIdp()
    with serving(lambda _: fake.app()) as base_url:
        fake.base_url = base_url
        yield fake


def test_after_the_idp_rotates_its_key_the_server_refetches_the_jwks_and_accepts_the_new_kid(
        rotating_idp: FakeIdp, database_url: str, tmp_path: Path):
    idp = rotating_idp
    server = _start(idp, database_url, tmp_path)  # its own JWKS cache, so the first fetch is this test's
    try:
        before = len(idp.jwks_requests)
        old = idp.sign(server.mcp_url)
        assert _result(call_tool(server.mcp_url, "get_account_profile", token=old))["isError"] is False
        assert len(idp.jwks_requests) == before + 1
        fetched_at = idp.jwks_requests[-1]

        idp.rotate()
        new = idp.sign(server.mcp_url)
        # Within MIN_REFRESH of the last fetch an unknown kid does not reach the IdP (forged kids cannot hammer it).
        assert call_tool(server.mcp_url, "get_account_profile", token=new).status_code == 401
        assert len(idp.jwks_requests) == before + 1

        time.sleep(max(0.0, fetched_at + MIN_REFRESH + 1 - time.monotonic()))  # the server's refresh interval
        accepted = _result(call_tool(server.mcp_url, "get_account_profile", token=new))
        assert accepted["isError"] is False and accepted["structuredContent"]["id"] == SUBJECT
        assert len(idp.jwks_requests) == before + 2
        # The old key is gone from the JWKS the server now holds.
        assert call_tool(server.mcp_url, "get_account_profile", token=old).status_code == 401
    finally:
        server.stop()


@pytest.fixture(scope="module")
def custom_audience_server(idp: FakeIdp, database_url: str, tmp_path_factory: pytest.TempPathFactory
                           ) -> Iterator[str]:
    var_dir = tmp_path_factory.mktemp("custom-audience")

    def build(base_url: str):
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json", _env_file=None,
                                 auth_mode="external", oauth_issuer=idp.base_url, oauth_jwks_url=idp.jwks_url,
                                 oauth_audience=CUSTOM_AUDIENCE, outbound_allowlist=[idp.host_port],
                                 var_dir=str(var_dir))
        return create_app(settings)

    with serving(build) as base_url:
        yield f"{base_url}/mcp"


def test_a_configured_audience_is_the_one_idp_tokens_must_carry(custom_audience_server: str, idp: FakeIdp):
    accepted = _result(call_tool(custom_audience_server, "get_account_profile", token=idp.sign(CUSTOM_AUDIENCE)))
    assert accepted["isError"] is False and accepted["structuredContent"]["id"] == SUBJECT

    refused = call_tool(custom_audience_server, "get_account_profile", token=idp.sign(custom_audience_server))
    assert refused.status_code == 401
    assert _challenge_params(refused.headers["www-authenticate"])["error"] == "invalid_token"
