"""The refusal table: each way a linking request can be wrong, one test each, against the real
server process. Each is rejected with the OAuth error the RFCs name, and nothing is issued."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet
from sqlalchemy import create_engine, text

from tests.e2e.conftest import Linking
from tests.e2e.oauth_client import (
    CHATGPT_REDIRECT,
    Browser,
    Pkce,
    authorize_params,
    call_tool,
    code_grant,
    query_of,
    token,
    with_assertion,
)

PASSWORD = "demo-password"


# --- helpers -----------------------------------------------------------------------------------------
def _sql(linking: Linking, statement: str, **params: Any) -> list[Any]:
    engine = create_engine(linking.server.database_url)
    try:
        with engine.begin() as conn:
            result = conn.execute(text(statement), params)
            return list(result) if result.returns_rows else []
    finally:
        engine.dispose()


def _grants(linking: Linking) -> int:
    return _sql(linking, "SELECT count(*) FROM oauth_grants")[0][0]


def _public_client(linking: Linking, scope: str = "recipes.write") -> str:
    response = httpx.post(f"{linking.base_url}/register", json={
        "redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "none", "scope": scope})
    assert response.status_code == 201, response.text
    return response.json()["client_id"]


def _code(linking: Linking, client_id: str, pkce: Pkce, scope: str = "recipes.write") -> str:
    params = authorize_params(client_id, pkce, linking.resource, scope=scope)
    return query_of(Browser(linking.base_url).sign_in(params, "alice", PASSWORD))["code"]


def _linked(linking: Linking, scope: str = "recipes.write") -> tuple[str, dict]:
    client_id, pkce = _public_client(linking, scope), Pkce.new()
    response = token(linking.base_url, code_grant(_code(linking, client_id, pkce, scope), pkce, linking.resource,
                                                  client_id=client_id))
    assert response.status_code == 200, response.text
    return client_id, response.json()


def _refused(response: httpx.Response, error: str, status: int = 400) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error, body
    assert "access_token" not in body and "refresh_token" not in body


def _redirected_error(response: httpx.Response, linking: Linking, error: str, state: str) -> None:
    assert response.status_code == 302, response.text
    callback = query_of(response.headers["location"])
    assert response.headers["location"].startswith(CHATGPT_REDIRECT)
    assert callback["error"] == error and "code" not in callback
    assert callback["iss"] == linking.base_url  # RFC 9207 on errors too
    assert callback["state"] == state


def _authorize(linking: Linking, **changes: str | None) -> httpx.Response:
    client_id, pkce = _public_client(linking), Pkce.new()
    params = authorize_params(client_id, pkce, linking.resource, state="s-err")
    params.update({k: v for k, v in changes.items() if v is not None})
    for key in [k for k, v in changes.items() if v is None]:
        params.pop(key)
    return Browser(linking.base_url).open_authorize(params)


def _server_key(linking: Linking) -> tuple[ECKey, str]:
    jwks = json.loads((linking.var_dir / "oauth-signing-keys.json").read_text())
    key = KeySet.import_key_set(jwks).keys[0]
    return key, jwks["keys"][0]["kid"]  # type: ignore[return-value]


def _forged(linking: Linking, *, key: ECKey | None = None, kid: str | None = None, typ: str = "at+jwt",
            **claims: Any) -> str:
    """A token signed with the server's own key (so only the claim under test is wrong)."""
    server_key, server_kid = _server_key(linking)
    accounts = _sql(linking, "SELECT id FROM accounts WHERE username = 'alice'")
    grant_client, grant = _linked(linking)
    grant_id = json.loads(__import__("base64").urlsafe_b64decode(grant["access_token"].split(".")[1] + "=="))["grant"]
    now = int(time.time())
    body = {"iss": linking.base_url, "sub": accounts[0][0], "aud": linking.resource, "client_id": grant_client,
            "scope": "recipes.write", "iat": now, "nbf": now, "exp": now + 300, "jti": secrets.token_hex(8),
            "grant": grant_id, **claims}
    return jwt.encode({"alg": "ES256", "kid": kid or server_kid, "typ": typ}, body, key or server_key)


def _rejected_on_mcp(linking: Linking, access_token: str) -> None:
    response = call_tool(linking.resource, "list_saved_recipes", token=access_token)
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{linking.base_url}/.well-known/oauth-protected-resource/mcp"' in challenge


# --- /authorize ----------------------------------------------------------------------------------------
def test_an_authorization_request_without_pkce_is_refused(linking: Linking):
    _redirected_error(_authorize(linking, code_challenge=None, code_challenge_method=None), linking,
                      "invalid_request", "s-err")


def test_an_authorization_request_with_plain_pkce_is_refused(linking: Linking):
    pkce = Pkce.new()
    _redirected_error(_authorize(linking, code_challenge=pkce.verifier, code_challenge_method="plain"), linking,
                      "invalid_request", "s-err")


def test_a_resource_this_server_does_not_serve_is_refused(linking: Linking):
    _redirected_error(_authorize(linking, resource="https://elsewhere.example/mcp"), linking, "invalid_target",
                      "s-err")


def test_a_response_type_other_than_code_is_refused(linking: Linking):
    _redirected_error(_authorize(linking, response_type="token"), linking, "unsupported_response_type", "s-err")


def test_an_unregistered_redirect_uri_gets_an_error_page_not_a_redirect(linking: Linking):
    response = _authorize(linking, redirect_uri="https://attacker.example/cb")
    assert response.status_code == 400 and "location" not in response.headers
    assert "attacker.example" in response.text and "<h1>" in response.text


def test_a_redirect_uri_that_only_shares_a_prefix_is_refused(linking: Linking):
    response = _authorize(linking, redirect_uri=CHATGPT_REDIRECT + "/../evil")
    assert response.status_code == 400 and "location" not in response.headers


def test_a_client_document_whose_client_id_differs_from_its_url_is_refused(linking: Linking):
    pkce = Pkce.new()
    client_id = f"{linking.site.base_url}/oauth/wrong-id.json"
    response = Browser(linking.base_url).open_authorize(authorize_params(client_id, pkce, linking.resource))
    assert response.status_code == 400 and "location" not in response.headers
    assert "client_id must equal its URL" in response.text


def test_a_client_document_url_resolving_to_a_private_address_is_not_fetched(linking: Linking):
    # localhost is an allowed CIMD host in this test server, but it resolves to loopback and is not
    # on the outbound allowlist: the guard refuses it before connecting.
    port = linking.site.base_url.rsplit(":", 1)[1]
    client_id = f"https://localhost:{port}/oauth/client.json"
    response = Browser(linking.base_url).open_authorize(authorize_params(client_id, Pkce.new(), linking.resource))
    assert response.status_code == 400 and "location" not in response.headers
    assert "could not be fetched" in response.text and "refused" in response.text


def test_a_login_form_without_its_csrf_token_is_refused(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    browser = Browser(linking.base_url)
    page = browser.open_authorize(authorize_params(client_id, pkce, linking.resource))
    assert page.status_code == 200
    from tests.e2e.oauth_client import only_form

    form = only_form(page.text)
    form["fields"]["csrf_token"] = "forged"
    response = browser.http.post("/authorize", data={**form["fields"], "username": "alice", "password": PASSWORD})
    assert response.status_code == 403 and 'role="alert"' in response.text


def test_a_wrong_password_shows_the_form_again_and_issues_nothing(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    browser = Browser(linking.base_url)
    from tests.e2e.oauth_client import only_form

    form = only_form(browser.open_authorize(authorize_params(client_id, pkce, linking.resource)).text)
    response = browser.http.post("/authorize", data={**form["fields"], "username": "alice", "password": "wrong!!!"})
    assert response.status_code == 401 and 'role="alert"' in response.text and "location" not in response.headers


def test_denying_consent_redirects_with_access_denied_and_iss(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    location = Browser(linking.base_url).sign_in(authorize_params(client_id, pkce, linking.resource, state="d1"),
                                                 "alice", PASSWORD, decision="deny")
    callback = query_of(location)
    assert callback["error"] == "access_denied" and callback["iss"] == linking.base_url and "code" not in callback


# --- /token ----------------------------------------------------------------------------------------------
def test_a_wrong_code_verifier_is_refused(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    code = _code(linking, client_id, pkce)
    before = _grants(linking)
    _refused(token(linking.base_url, code_grant(code, Pkce.new(), linking.resource, client_id=client_id)),
             "invalid_grant")
    assert _grants(linking) == before


def test_a_missing_code_verifier_is_refused(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    data = code_grant(_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id)
    data.pop("code_verifier")
    _refused(token(linking.base_url, data), "invalid_request")


def test_a_replayed_code_is_refused_and_revokes_what_it_issued(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    grant = code_grant(_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id)
    first = token(linking.base_url, grant)
    assert first.status_code == 200
    # Long after the first use (moved back a minute: the retry window is 10 s), the code comes back.
    _sql(linking, "UPDATE oauth_authorization_codes SET redeemed_at = redeemed_at - 60 WHERE client_id = :c",
         c=client_id)
    before = _grants(linking)
    _refused(token(linking.base_url, grant), "invalid_grant")
    assert _grants(linking) == before
    _rejected_on_mcp(linking, first.json()["access_token"])  # the first use's tokens are revoked too


def test_a_code_replayed_without_its_pkce_secret_revokes_what_it_issued_at_once(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    grant = code_grant(_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id)
    first = token(linking.base_url, grant)
    assert first.status_code == 200
    _refused(token(linking.base_url, {**grant, "code_verifier": Pkce.new().verifier}), "invalid_grant")
    _rejected_on_mcp(linking, first.json()["access_token"])


def test_a_client_retrying_its_code_exchange_at_once_is_refused_but_keeps_its_tokens(linking: Linking):
    """ChatGPT has posted /token twice: the duplicate, proving the same PKCE secret seconds later, is
    refused without ending the link the first one made."""
    client_id, pkce = _public_client(linking), Pkce.new()
    grant = code_grant(_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id)
    first = token(linking.base_url, grant)
    assert first.status_code == 200
    _refused(token(linking.base_url, grant), "invalid_grant")
    assert call_tool(linking.resource, "list_saved_recipes", token=first.json()["access_token"]).status_code == 200


def test_an_expired_code_is_refused(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    code = _code(linking, client_id, pkce)
    # Expiry as the clock would bring it (the code lives APP_OAUTH_CODE_TTL seconds): moved into the past.
    _sql(linking, "UPDATE oauth_authorization_codes SET expires_at = :t WHERE client_id = :c",
         t=int(time.time()) - 1, c=client_id)
    _refused(token(linking.base_url, code_grant(code, pkce, linking.resource, client_id=client_id)), "invalid_grant")


def test_a_redirect_uri_differing_at_the_token_endpoint_is_refused(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    data = code_grant(_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id,
                      redirect_uri="https://chatgpt.com/other")
    _refused(token(linking.base_url, data), "invalid_grant")


def test_a_different_resource_at_the_token_endpoint_is_refused(linking: Linking):
    client_id, pkce = _public_client(linking), Pkce.new()
    data = code_grant(_code(linking, client_id, pkce), pkce, "https://elsewhere.example/mcp", client_id=client_id)
    _refused(token(linking.base_url, data), "invalid_target")


def test_a_rotated_refresh_token_still_works_within_the_grace_window(linking: Linking):
    client_id, tokens = _linked(linking)
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
    assert token(linking.base_url, data).status_code == 200
    retried = token(linking.base_url, data)  # the client lost the first answer and retries
    assert retried.status_code == 200, retried.text


def test_a_refresh_token_reused_after_the_grace_window_revokes_the_whole_family(linking: Linking):
    client_id, tokens = _linked(linking)
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
    successor = token(linking.base_url, data).json()
    # The grace window (APP_OAUTH_REFRESH_GRACE) as the clock would close it: the rotation moved an hour back.
    _sql(linking, "UPDATE oauth_refresh_tokens SET rotated_at = rotated_at - 3600 WHERE rotated_at IS NOT NULL")
    _refused(token(linking.base_url, data), "invalid_grant")
    _rejected_on_mcp(linking, successor["access_token"])
    _refused(token(linking.base_url, {**data, "refresh_token": successor["refresh_token"]}), "invalid_grant")


def test_a_refresh_asking_for_more_scope_than_granted_is_refused(linking: Linking):
    client_id, tokens = _linked(linking, scope="recipes.read")
    _refused(token(linking.base_url, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                      "client_id": client_id, "scope": "recipes.read recipes.write"}), "invalid_scope")


def test_a_refresh_by_another_client_is_refused(linking: Linking):
    _, tokens = _linked(linking)
    _refused(token(linking.base_url, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                      "client_id": _public_client(linking)}), "invalid_grant")


def _cimd_code(linking: Linking) -> tuple[str, Pkce]:
    pkce = Pkce.new()
    params = authorize_params(linking.site.client_id, pkce, linking.resource)
    return query_of(Browser(linking.base_url).sign_in(params, "alice", PASSWORD))["code"], pkce


@pytest.mark.parametrize("case", ["replayed_jti", "wrong_audience", "unknown_key", "expired"])
def test_a_bad_private_key_jwt_assertion_is_refused(linking: Linking, case: str):
    code, pkce = _cimd_code(linking)
    grant, site, token_url = code_grant(code, pkce, linking.resource), linking.site, f"{linking.base_url}/token"
    if case == "replayed_jti":
        used = site.assertion(token_url, jti="once-only-" + secrets.token_hex(4))
        first_code, first_pkce = _cimd_code(linking)
        assert token(linking.base_url, with_assertion(code_grant(first_code, first_pkce, linking.resource),
                                                      used)).status_code == 200
        assertion = used
    elif case == "wrong_audience":
        assertion = site.assertion("https://another-server.example/token")
    elif case == "unknown_key":
        assertion = site.assertion(token_url, key=ECKey.generate_key("P-256", private=True), kid="not-published")
    else:
        assertion = site.assertion(token_url, exp_in=-120)
    before = _grants(linking)
    _refused(token(linking.base_url, with_assertion(grant, assertion)), "invalid_client", 400)
    assert _grants(linking) == before


# --- /mcp: tokens the resource server must not accept -----------------------------------------------------
def test_a_token_for_another_audience_is_rejected_on_mcp(linking: Linking):
    _rejected_on_mcp(linking, _forged(linking, aud="https://elsewhere.example/mcp"))


def test_a_token_from_another_issuer_is_rejected_on_mcp(linking: Linking):
    _rejected_on_mcp(linking, _forged(linking, iss="https://impostor.example"))


def test_an_expired_token_is_rejected_on_mcp(linking: Linking):
    _rejected_on_mcp(linking, _forged(linking, exp=int(time.time()) - 120, iat=int(time.time()) - 900))


def test_a_token_signed_by_an_unknown_key_is_rejected_on_mcp(linking: Linking):
    _rejected_on_mcp(linking, _forged(linking, key=ECKey.generate_key("P-256", private=True), kid="rogue"))


def test_a_jwt_that_is_not_an_access_token_is_rejected_on_mcp(linking: Linking):
    _rejected_on_mcp(linking, _forged(linking, typ="JWT"))


def test_a_revoked_token_is_rejected_on_mcp(linking: Linking):
    client_id, tokens = _linked(linking)
    assert call_tool(linking.resource, "list_saved_recipes", token=tokens["access_token"]).status_code == 200
    revoked = httpx.post(f"{linking.base_url}/revoke", data={"token": tokens["access_token"], "client_id": client_id})
    assert revoked.status_code == 200
    _rejected_on_mcp(linking, tokens["access_token"])


def test_a_forged_token_that_is_well_formed_otherwise_is_accepted(linking: Linking):
    """Control for the rows above: the forging helper itself makes a token the server accepts."""
    assert call_tool(linking.resource, "list_saved_recipes", token=_forged(linking)).status_code == 200
