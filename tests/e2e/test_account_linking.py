"""Account linking end to end, over real HTTP against the real server process: the dance ChatGPT
does (protected-resource metadata -> authorization-server metadata -> client registration ->
authorize -> login -> consent -> code + PKCE -> token -> tools/call -> refresh -> revoke),
through each registration path: CIMD with private_key_jwt, DCR, and a pre-registered client."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
from joserfc import jws
from prometheus_client.parser import text_string_to_metric_families

from tests.challenges import CHATGPT_META, assert_http_challenge, plain_call
from tests.e2e import linking_steps as steps
from tests.e2e.conftest import Linking
from tests.e2e.oauth_client import (
    CHATGPT_REDIRECT,
    Browser,
    Pkce,
    authorize_params,
    call_tool,
    code_grant,
    only_form,
    query_of,
    token,
    with_assertion,
)
from tests.e2e.server import ROOT

# the linking scope asked for is "recipes.write search.read"
pytestmark = [pytest.mark.demo("recipes", "search"), pytest.mark.authserver]

DEMO_PASSWORD = "demo-password"


def _structured(response: httpx.Response) -> dict:
    body = response.json()
    assert "error" not in body, body
    return body["result"]


def _link_with_cimd(linking: Linking, username: str = "alice", scope: str = "openid recipes.write search.read"
                    ) -> dict:
    site, pkce = linking.site, Pkce.new()
    params = authorize_params(site.client_id, pkce, linking.resource, scope=scope, state="st-1")
    callback = query_of(Browser(linking.base_url).sign_in(params, username, DEMO_PASSWORD))
    assert callback["state"] == "st-1" and callback["iss"] == linking.base_url
    response = token(linking.base_url, with_assertion(code_grant(callback["code"], pkce, linking.resource),
                                                      site.assertion(f"{linking.base_url}/token")))
    assert response.status_code == 200, response.text
    return response.json()


def test_chatgpt_links_an_account_through_its_client_metadata_document(linking: Linking):
    base = linking.base_url
    # 1. Discovery, as ChatGPT does it: the challenge names the PRM, the PRM names the issuer.
    anonymous = call_tool(linking.resource, "list_saved_recipes", meta=CHATGPT_META)
    challenge = _structured(anonymous)["_meta"]["mcp/www_authenticate"][0]
    # The same call from a client that is not ChatGPT: the challenge as an HTTP 401, naming the same PRM.
    plain = plain_call(linking.resource, "list_saved_recipes")
    assert_http_challenge(plain, base, "recipes.read", signed_in=False)
    assert plain.headers["www-authenticate"].split('resource_metadata="')[1].split('"')[0] == \
        challenge.split('resource_metadata="')[1].split('"')[0]
    prm_url = challenge.split('resource_metadata="')[1].split('"')[0]
    assert prm_url == f"{base}/.well-known/oauth-protected-resource/mcp"
    for url in (prm_url, f"{base}/.well-known/oauth-protected-resource"):
        prm = httpx.get(url).json()
        assert prm["resource"] == linking.resource
        assert prm["authorization_servers"] == [base]
        assert {"recipes.read", "recipes.write", "search.read"} <= set(prm["scopes_supported"])
    metadata = httpx.get(f"{base}/.well-known/oauth-authorization-server").json()
    assert metadata["issuer"] == prm["authorization_servers"][0]  # byte for byte
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["client_id_metadata_document_supported"] is True
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert {"none", "private_key_jwt"} <= set(metadata["token_endpoint_auth_methods_supported"])
    for key in ("registration_endpoint", "revocation_endpoint", "introspection_endpoint", "jwks_uri"):
        assert metadata[key].startswith(base)

    # 2. Authorize with the CIMD client id, sign in, consent, redeem with private_key_jwt + PKCE.
    tokens = _link_with_cimd(linking)
    assert tokens["token_type"] == "Bearer" and 300 <= tokens["expires_in"] <= 900
    assert tokens["scope"] == "recipes.write search.read"  # "openid" is not ours: dropped, not refused
    header = jws.extract_compact(tokens["access_token"].encode()).headers()
    assert header["typ"] == "at+jwt" and header["kid"] in {k["kid"] for k in httpx.get(metadata["jwks_uri"]).json()[
        "keys"]}

    # 3. The token opens the oauth tools, for alice.
    access = tokens["access_token"]
    profile = _structured(call_tool(linking.resource, "get_account_profile", token=access))["structuredContent"]
    assert profile["id"].startswith("acct_") and profile["nickname"] == "alice"
    saved = _structured(call_tool(linking.resource, "save_recipe", {"title": "Shakshuka"}, token=access))
    assert saved["isError"] is False, saved
    listed = _structured(call_tool(linking.resource, "list_saved_recipes", token=access))["structuredContent"]
    assert "Shakshuka" in [r["title"] for r in listed["recipes"]]

    # 4. Refresh: a new pair, the same account.
    refreshed = token(base, with_assertion({"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                            "resource": linking.resource}, linking.site.assertion(f"{base}/token")))
    assert refreshed.status_code == 200, refreshed.text
    renewed = refreshed.json()
    assert renewed["refresh_token"] != tokens["refresh_token"]
    again = _structured(call_tool(linking.resource, "get_account_profile", token=renewed["access_token"]))
    assert again["structuredContent"]["id"] == profile["id"]  # stable across refresh

    # 5. Revoke: every token of the grant stops working.
    revoked = httpx.post(f"{base}/revoke", data=with_assertion({"token": renewed["refresh_token"]},
                                                                linking.site.assertion(f"{base}/token")))
    assert revoked.status_code == 200, revoked.text
    assert call_tool(linking.resource, "get_account_profile", token=renewed["access_token"]).status_code == 401
    assert call_tool(linking.resource, "get_account_profile", token=access).status_code == 401
    after = token(base, with_assertion({"grant_type": "refresh_token", "refresh_token": renewed["refresh_token"]},
                                       linking.site.assertion(f"{base}/token")))
    assert after.status_code == 400 and after.json()["error"] == "invalid_grant"


def test_a_client_registered_dynamically_links_an_account(linking: Linking):
    base = linking.base_url
    registration = httpx.post(f"{base}/register", json={
        "client_name": "Some MCP client", "redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "scope": "recipes.read unknown.scope"})
    assert registration.status_code == 201, registration.text
    client = registration.json()
    assert client["scope"] == "recipes.read" and "client_secret" not in client  # unknown scope dropped; public
    pkce = Pkce.new()
    callback = query_of(Browser(base).sign_in(authorize_params(client["client_id"], pkce, linking.resource,
                                                               scope="recipes.read"), "bob", DEMO_PASSWORD))
    assert callback["iss"] == base
    response = token(base, code_grant(callback["code"], pkce, linking.resource, client_id=client["client_id"]))
    assert response.status_code == 200, response.text
    tokens = response.json()
    assert tokens["scope"] == "recipes.read"
    listed = _structured(call_tool(linking.resource, "list_saved_recipes", token=tokens["access_token"]))
    assert listed["isError"] is False
    # recipes.read does not allow writing: the challenge asks for recipes.write
    refused = _structured(call_tool(linking.resource, "save_recipe", {"title": "Soup"}, token=tokens["access_token"],
                                    meta=CHATGPT_META))
    assert refused["isError"] is True and 'scope="recipes.write"' in refused["_meta"]["mcp/www_authenticate"][0]
    assert_http_challenge(plain_call(linking.resource, "save_recipe", {"title": "Soup"}, token=tokens["access_token"]),
                          base, "recipes.write", signed_in=True)
    refreshed = token(base, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                             "client_id": client["client_id"]})
    assert refreshed.status_code == 200, refreshed.text
    revoked = httpx.post(f"{base}/revoke", data={"token": refreshed.json()["access_token"],
                                                 "token_type_hint": "access_token", "client_id": client["client_id"]})
    assert revoked.status_code == 200
    assert call_tool(linking.resource, "list_saved_recipes", token=refreshed.json()["access_token"]).status_code == 401


def test_a_pre_registered_client_links_an_account(linking: Linking):
    base = linking.base_url
    created = subprocess.run(
        [sys.executable, "-m", "app", "clients", "create", "--name", "Partner", "--redirect-uri",
         "https://partner.example/callback", "--auth-method", "client_secret_basic"],
        cwd=ROOT, env={**linking.server.environ_used, "APP_DATABASE_URL": linking.server.database_url},
        capture_output=True, text=True, timeout=60)
    assert created.returncode == 0, created.stderr
    lines = dict(line.split(": ", 1) for line in created.stdout.splitlines())
    client_id, secret = lines["client_id"], lines["client_secret"].split()[0]
    pkce = Pkce.new()
    params = authorize_params(client_id, pkce, linking.resource, redirect_uri="https://partner.example/callback")
    callback = query_of(Browser(base).sign_in(params, "alice", DEMO_PASSWORD))
    grant = code_grant(callback["code"], pkce, linking.resource, redirect_uri="https://partner.example/callback")
    assert token(base, grant, auth=(client_id, "wrong-secret")).json()["error"] == "invalid_client"
    response = token(base, grant, auth=(client_id, secret))
    assert response.status_code == 200, response.text
    access = response.json()["access_token"]
    introspected = httpx.post(f"{base}/introspect", data={"token": access}, auth=(client_id, secret)).json()
    assert introspected["active"] is True and introspected["client_id"] == client_id
    assert introspected["aud"] == linking.resource
    assert _structured(call_tool(linking.resource, "list_saved_recipes", token=access))["isError"] is False


def _sign_in_and_grant_counts(linking: Linking) -> dict[tuple[str, tuple], float]:
    resp = httpx.get(f"{linking.base_url}/metrics", timeout=10)
    assert resp.status_code == 200, resp.text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for family in text_string_to_metric_families(resp.text)
            for s in family.samples if s.name in ("app_sign_ins_total", "app_token_grants_total")}


def test_sign_ins_and_token_grants_are_counted_on_metrics_by_outcome(linking: Linking):
    before = _sign_in_and_grant_counts(linking)
    client_id, tokens = steps.linked(linking)  # a sign-in, and a code exchanged
    browser, pkce = Browser(linking.base_url), Pkce.new()
    login = only_form(browser.open_authorize(authorize_params(client_id, pkce, linking.resource,
                                                              scope="recipes.write")).text)
    wrong = browser.http.post(login["action"], data={**login["fields"], "username": "alice", "password": "wrong"})
    assert wrong.status_code == 401
    assert steps.refresh(linking, client_id, tokens["refresh_token"]).status_code == 200
    assert steps.refresh(linking, client_id, "not-a-refresh-token").status_code == 400
    assert token(linking.base_url, {"grant_type": "urn:made:up", "client_id": client_id}).status_code == 400
    # A client's fault is its error code, however it is answered (the metadata fetch, the body parser).
    assert token(linking.base_url, {"grant_type": "authorization_code", "code": "x",
                                    "client_id": "https://evil.example/client"}).status_code == 401
    assert httpx.post(f"{linking.base_url}/token", content=b"grant_type=refresh_token&refresh_token=a%00b",
                      headers={"content-type": "application/x-www-form-urlencoded"}, timeout=10).status_code == 400
    after = _sign_in_and_grant_counts(linking)
    grown = {key: value - before.get(key, 0.0) for key, value in after.items() if value != before.get(key, 0.0)}
    assert grown == {
        ("app_sign_ins_total", (("outcome", "success"),)): 1,
        ("app_sign_ins_total", (("outcome", "bad_credentials"),)): 1,
        ("app_token_grants_total", (("grant_type", "authorization_code"), ("outcome", "issued"))): 1,
        ("app_token_grants_total", (("grant_type", "refresh_token"), ("outcome", "issued"))): 1,
        ("app_token_grants_total", (("grant_type", "refresh_token"), ("outcome", "invalid_grant"))): 1,
        ("app_token_grants_total", (("grant_type", "_OTHER"), ("outcome", "unsupported_grant_type"))): 1,
        ("app_token_grants_total", (("grant_type", "authorization_code"), ("outcome", "invalid_client"))): 1,
        ("app_token_grants_total", (("grant_type", ""), ("outcome", "invalid_request"))): 1,
    }
