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

from tests.e2e import linking_steps as steps
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

# the linking scope asked for is "recipes.write search.read"
pytestmark = [pytest.mark.demo("recipes", "search"), pytest.mark.authserver]

PASSWORD = steps.PASSWORD


# --- helpers -----------------------------------------------------------------------------------------
def _grants(linking: Linking) -> int:
    return steps.sql(linking, "SELECT count(*) FROM oauth_grants")[0][0]


def _authorize(linking: Linking, client_id: str | None = None, **changes: str | None) -> httpx.Response:
    """An authorization request of the CIMD client (its redirect URIs vouched for by its host), or of ``client_id``."""
    client_id, pkce = client_id or linking.site.client_id, Pkce.new()
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
    accounts = steps.sql(linking, "SELECT id FROM accounts WHERE username = 'alice'")
    grant_client, grant = steps.linked(linking)
    grant_id = steps.grant_of(grant["access_token"])
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
    steps.redirected_error(_authorize(linking, code_challenge=None, code_challenge_method=None), linking,
                      "invalid_request", "s-err")


def test_an_authorization_request_with_plain_pkce_is_refused(linking: Linking):
    pkce = Pkce.new()
    steps.redirected_error(_authorize(linking, code_challenge=pkce.verifier, code_challenge_method="plain"), linking,
                      "invalid_request", "s-err")


def test_a_resource_this_server_does_not_serve_is_refused(linking: Linking):
    steps.redirected_error(_authorize(linking, resource="https://elsewhere.example/mcp"), linking, "invalid_target",
                      "s-err")


def test_a_response_type_other_than_code_is_refused(linking: Linking):
    steps.redirected_error(_authorize(linking, response_type="token"), linking, "unsupported_response_type", "s-err")


@pytest.mark.parametrize("changes", [{"response_type": "token"}, {"code_challenge": None},
                                     {"resource": "https://elsewhere.example/mcp"}],
                         ids=["token", "no-pkce", "resource"])
def test_an_error_of_a_client_anyone_registered_is_a_page_never_a_redirect(linking: Linking, changes: dict):
    """DCR needs no proof of anything: redirecting its errors before any sign-in would make /authorize an open
    redirector carrying this server's issuer (RFC 9700 §4.11.2)."""
    response = _authorize(linking, steps.public_client(linking), **changes)
    assert response.status_code == 400 and "location" not in response.headers, response.headers
    assert response.headers["x-frame-options"] == "DENY"
    assert "attacker" not in response.text and "text/html" in response.headers["content-type"]


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
    client_id, pkce = steps.public_client(linking), Pkce.new()
    browser = Browser(linking.base_url)
    page = browser.open_authorize(authorize_params(client_id, pkce, linking.resource))
    assert page.status_code == 200
    from tests.e2e.oauth_client import only_form

    form = only_form(page.text)
    form["fields"]["csrf_token"] = "forged"
    response = browser.http.post("/authorize", data={**form["fields"], "username": "alice", "password": PASSWORD})
    assert response.status_code == 403 and 'role="alert"' in response.text


def test_a_wrong_password_shows_the_form_again_and_issues_nothing(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    browser = Browser(linking.base_url)
    from tests.e2e.oauth_client import only_form

    form = only_form(browser.open_authorize(authorize_params(client_id, pkce, linking.resource)).text)
    response = browser.http.post("/authorize", data={**form["fields"], "username": "alice", "password": "wrong!!!"})
    assert response.status_code == 401 and 'role="alert"' in response.text and "location" not in response.headers


def test_denying_consent_redirects_with_access_denied_and_iss(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    location = Browser(linking.base_url).sign_in(authorize_params(client_id, pkce, linking.resource, state="d1"),
                                                 "alice", PASSWORD, decision="deny")
    callback = query_of(location)
    assert callback["error"] == "access_denied" and callback["iss"] == linking.base_url and "code" not in callback


# --- /token ----------------------------------------------------------------------------------------------
def test_a_wrong_code_verifier_is_refused(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    code = steps.signed_in_code(linking, client_id, pkce)
    before = _grants(linking)
    steps.refused(token(linking.base_url, code_grant(code, Pkce.new(), linking.resource, client_id=client_id)),
             "invalid_grant")
    assert _grants(linking) == before


def test_a_missing_code_verifier_is_refused(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    data = code_grant(steps.signed_in_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id)
    data.pop("code_verifier")
    steps.refused(token(linking.base_url, data), "invalid_request")


def test_a_replayed_code_is_refused_and_revokes_what_it_issued(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    grant = code_grant(steps.signed_in_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id)
    first = token(linking.base_url, grant)
    assert first.status_code == 200
    # Long after the first use (moved back a minute: the retry window is 10 s), the code comes back.
    steps.sql(linking, "UPDATE oauth_authorization_codes SET redeemed_at = redeemed_at - 60 WHERE client_id = :c",
              c=client_id)
    before = _grants(linking)
    steps.refused(token(linking.base_url, grant), "invalid_grant")
    assert _grants(linking) == before
    _rejected_on_mcp(linking, first.json()["access_token"])  # the first use's tokens are revoked too


def test_a_code_replayed_without_its_pkce_secret_revokes_what_it_issued_at_once(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    grant = code_grant(steps.signed_in_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id)
    first = token(linking.base_url, grant)
    assert first.status_code == 200
    steps.refused(token(linking.base_url, {**grant, "code_verifier": Pkce.new().verifier}), "invalid_grant")
    _rejected_on_mcp(linking, first.json()["access_token"])


def test_a_client_retrying_its_code_exchange_at_once_is_refused_but_keeps_its_tokens(linking: Linking):
    """ChatGPT has posted /token twice: the duplicate, proving the same PKCE secret seconds later, is
    refused without ending the link the first one made."""
    client_id, pkce = steps.public_client(linking), Pkce.new()
    grant = code_grant(steps.signed_in_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id)
    first = token(linking.base_url, grant)
    assert first.status_code == 200
    steps.refused(token(linking.base_url, grant), "invalid_grant")
    assert call_tool(linking.resource, "list_saved_recipes", token=first.json()["access_token"]).status_code == 200


def test_an_expired_code_is_refused(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    code = steps.signed_in_code(linking, client_id, pkce)
    # Expiry as the clock would bring it (the code lives APP_OAUTH_CODE_TTL seconds): moved into the past.
    steps.sql(linking, "UPDATE oauth_authorization_codes SET expires_at = :t WHERE client_id = :c",
              t=int(time.time()) - 1, c=client_id)
    steps.refused(token(linking.base_url, code_grant(code, pkce, linking.resource, client_id=client_id)),
                  "invalid_grant")


def test_a_redirect_uri_differing_at_the_token_endpoint_is_refused(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    data = code_grant(steps.signed_in_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id,
                      redirect_uri="https://chatgpt.com/other")
    steps.refused(token(linking.base_url, data), "invalid_grant")


def test_a_different_resource_at_the_token_endpoint_is_refused(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    code = steps.signed_in_code(linking, client_id, pkce)
    data = code_grant(code, pkce, "https://elsewhere.example/mcp", client_id=client_id)
    steps.refused(token(linking.base_url, data), "invalid_target")


def test_a_rotated_refresh_token_still_works_within_the_grace_window(linking: Linking):
    client_id, tokens = steps.linked(linking)
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
    assert token(linking.base_url, data).status_code == 200
    retried = token(linking.base_url, data)  # the client lost the first answer and retries
    assert retried.status_code == 200, retried.text


def test_a_refresh_token_reused_after_the_grace_window_revokes_the_whole_family(linking: Linking):
    client_id, tokens = steps.linked(linking)
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
    successor = token(linking.base_url, data).json()
    # The grace window (APP_OAUTH_REFRESH_GRACE) as the clock would close it: the rotation moved an hour back.
    steps.sql(linking, "UPDATE oauth_refresh_tokens SET rotated_at = rotated_at - 3600 WHERE rotated_at IS NOT NULL")
    steps.refused(token(linking.base_url, data), "invalid_grant")
    _rejected_on_mcp(linking, successor["access_token"])
    steps.refused(token(linking.base_url, {**data, "refresh_token": successor["refresh_token"]}), "invalid_grant")


def test_a_refresh_asking_for_more_scope_than_granted_is_refused(linking: Linking):
    client_id, tokens = steps.linked(linking, scope="recipes.read")
    steps.refused(token(linking.base_url, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                      "client_id": client_id, "scope": "recipes.read recipes.write"}), "invalid_scope")


def test_a_refresh_by_another_client_is_refused(linking: Linking):
    _, tokens = steps.linked(linking)
    steps.refused(token(linking.base_url, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                      "client_id": steps.public_client(linking)}), "invalid_grant")


@pytest.mark.parametrize("case", ["replayed_jti", "wrong_audience", "unknown_key", "expired"])
def test_a_bad_private_key_jwt_assertion_is_refused(linking: Linking, case: str):
    code, pkce = steps.cimd_code(linking)
    grant, site, token_url = code_grant(code, pkce, linking.resource), linking.site, f"{linking.base_url}/token"
    if case == "replayed_jti":
        used = site.assertion(token_url, jti="once-only-" + secrets.token_hex(4))
        first_code, first_pkce = steps.cimd_code(linking)
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
    steps.refused(token(linking.base_url, with_assertion(grant, assertion)), "invalid_client", 400)
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
    client_id, tokens = steps.linked(linking)
    assert call_tool(linking.resource, "list_saved_recipes", token=tokens["access_token"]).status_code == 200
    revoked = httpx.post(f"{linking.base_url}/revoke", data={"token": tokens["access_token"], "client_id": client_id})
    assert revoked.status_code == 200
    _rejected_on_mcp(linking, tokens["access_token"])


def test_a_forged_token_that_is_well_formed_otherwise_is_accepted(linking: Linking):
    """Control for the rows above: the forging helper itself makes a token the server accepts."""
    assert call_tool(linking.resource, "list_saved_recipes", token=_forged(linking)).status_code == 200
