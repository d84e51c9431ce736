"""Regression tests for the review fixes to the built-in authorization server, against the real
server process over HTTP: malformed input answers 4xx (never 500), the consent ticket is bound to
its request and browser, private_key_jwt takes asymmetric algorithms only, a refresh retried in the
grace window leaves one chain, disabled accounts stop at once, concurrent redemptions and
assertion replays stay consistent, and /token need not repeat a redirect URI /authorize omitted."""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, OctKey, RSAKey

from tests.e2e import linking_steps as steps
from tests.e2e.conftest import LINKING_GRANT_CACHE_TTL, Linking
from tests.e2e.oauth_client import (
    ASSERTION_TYPE,
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

PASSWORD = steps.PASSWORD
MALFORMED_RESOURCES = ["https://h:99999/mcp", "http://[::1/mcp", "http://h:abc/mcp"]


# --- helpers -----------------------------------------------------------------------------------------
def _error_page(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "location" not in response.headers


def _mcp_status(linking: Linking, access_token: str) -> int:
    return call_tool(linking.resource, "list_saved_recipes", token=access_token).status_code


def _consent_form(browser: Browser, params: dict[str, str], username: str = "alice") -> dict[str, Any]:
    """Authorize and sign in, stopping at the consent page: its form (action and fields)."""
    page = browser.open_authorize(params)
    assert page.status_code == 200, page.text
    login = only_form(page.text)
    consent_page = browser.http.post(login["action"], data={**login["fields"], "username": username,
                                                           "password": PASSWORD})
    assert consent_page.status_code == 200, consent_page.text
    form = only_form(consent_page.text)
    assert {"oauth_request", "login_ticket", "csrf_token"} <= set(form["fields"]), form
    return form


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _claims(client_id: str, audience: str, jti: str | None = None) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": client_id, "sub": client_id, "aud": audience, "iat": now, "exp": now + 60,
            "jti": jti or secrets.token_urlsafe(12)}


def _signed(client_id: str, audience: str, key: Any, alg: str, kid: str | None = None,
            jti: str | None = None) -> str:
    header = {"alg": alg, **({"kid": kid} if kid else {})}
    return jwt.encode(header, _claims(client_id, audience, jti), key, algorithms=[alg])


def _unsigned(client_id: str, audience: str, kid: str | None = None) -> str:
    header = {"alg": "none", "typ": "JWT", **({"kid": kid} if kid else {})}
    return (f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(_claims(client_id, audience)).encode())}.")


def _revoke_with(linking: Linking, assertion: str, token_value: str = "not-a-token") -> httpx.Response:
    """/revoke authenticated by an assertion: 200 when the client authenticated (RFC 7009 §2.2 answers 200
    for an unknown token too), invalid_client when it did not."""
    return httpx.post(f"{linking.base_url}/revoke", data={"token": token_value, "client_assertion_type": ASSERTION_TYPE,
                                                          "client_assertion": assertion}, timeout=15)


def _token_url(linking: Linking) -> str:
    return f"{linking.base_url}/token"


# --- A. malformed input answers 4xx, never 500 -------------------------------------------------------
@pytest.mark.parametrize("resource", MALFORMED_RESOURCES)
def test_a_malformed_resource_at_authorize_redirects_with_invalid_target(linking: Linking, resource: str):
    client_id, pkce = linking.site.client_id, Pkce.new()  # a metadata document's client: its errors are redirected
    params = authorize_params(client_id, pkce, linking.resource, state="s-bad-resource")
    params["resource"] = resource
    steps.redirected_error(Browser(linking.base_url).open_authorize(params), linking, "invalid_target",
                           "s-bad-resource")


def test_a_malformed_resource_at_token_is_invalid_target(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    code = steps.signed_in_code(linking, client_id, pkce)
    for resource in MALFORMED_RESOURCES:
        steps.refused(token(linking.base_url, code_grant(code, pkce, resource, client_id=client_id)), "invalid_target")


def test_registration_with_an_unclosed_ipv6_redirect_uri_is_invalid_redirect_uri(linking: Linking):
    response = httpx.post(f"{linking.base_url}/register", json={"redirect_uris": ["https://[::1/cb"]})
    steps.refused(response, "invalid_redirect_uri")


def test_registration_with_a_grant_type_that_is_not_a_string_is_invalid_client_metadata(linking: Linking):
    response = httpx.post(f"{linking.base_url}/register", json={
        "redirect_uris": [CHATGPT_REDIRECT], "grant_types": ["authorization_code", {}]})
    steps.refused(response, "invalid_client_metadata")


def test_registration_with_deeply_nested_json_is_invalid_client_metadata(linking: Linking):
    body = "[" * 2000 + "]" * 2000
    response = httpx.post(f"{linking.base_url}/register", content=body,
                          headers={"content-type": "application/json"})
    steps.refused(response, "invalid_client_metadata")


def test_registration_with_a_nul_in_the_client_name_is_refused(linking: Linking):
    response = httpx.post(f"{linking.base_url}/register", json={
        "redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "none", "client_name": "Chat\u0000GPT"})
    steps.refused(response, "invalid_client_metadata")


def test_authorize_with_a_nul_in_the_client_id_is_an_error_page(linking: Linking):
    client_id = steps.public_client(linking)
    params = authorize_params(client_id, Pkce.new(), linking.resource)
    query = urlencode(params).replace(f"client_id={client_id}", f"client_id={client_id}%00")
    assert "%00" in query
    response = httpx.get(f"{linking.base_url}/authorize?{query}")
    _error_page(response, 400)


def test_a_login_post_with_a_non_ascii_csrf_token_is_refused(linking: Linking):
    client_id = steps.public_client(linking)
    browser = Browser(linking.base_url)
    form = only_form(browser.open_authorize(authorize_params(client_id, Pkce.new(), linking.resource)).text)
    response = browser.http.post("/authorize", data={**form["fields"], "csrf_token": "é", "username": "alice",
                                                     "password": PASSWORD})
    _error_page(response, 403)
    assert 'role="alert"' in response.text


def test_a_consent_post_with_a_non_ascii_csrf_token_is_refused(linking: Linking):
    browser = Browser(linking.base_url)
    form = _consent_form(browser, authorize_params(steps.public_client(linking), Pkce.new(), linking.resource))
    response = browser.http.post(form["action"], data={**form["fields"], "csrf_token": "ü", "decision": "approve"})
    _error_page(response, 403)


def test_a_consent_post_with_a_non_ascii_login_ticket_is_refused(linking: Linking):
    browser = Browser(linking.base_url)
    form = _consent_form(browser, authorize_params(steps.public_client(linking), Pkce.new(), linking.resource))
    response = browser.http.post(form["action"], data={**form["fields"], "login_ticket": "abc.é",
                                                       "decision": "approve"})
    _error_page(response, 403)


def test_token_with_a_nul_in_the_client_id_is_invalid_request(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    code = steps.signed_in_code(linking, client_id, pkce)
    body = urlencode(code_grant(code, pkce, linking.resource, client_id=client_id)).replace(
        f"client_id={client_id}", f"client_id={client_id}%00")
    assert "%00" in body
    response = httpx.post(f"{linking.base_url}/token", content=body,
                          headers={"content-type": "application/x-www-form-urlencoded"})
    steps.refused(response, "invalid_request")


def test_revoke_with_an_unknown_token_type_hint_still_revokes_the_token(linking: Linking):
    client_id, tokens = steps.linked(linking)
    response = httpx.post(f"{linking.base_url}/revoke", data={
        "token": tokens["refresh_token"], "token_type_hint": "unknown_type", "client_id": client_id})
    assert response.status_code == 200, response.text
    steps.refused(steps.refresh(linking, client_id, tokens["refresh_token"]), "invalid_grant")
    assert _mcp_status(linking, tokens["access_token"]) == 401


# --- B. consent tampering ------------------------------------------------------------------------------
def test_a_consent_whose_authorization_request_was_changed_is_refused(linking: Linking):
    client_id = steps.public_client(linking, scope="recipes.write search.read")
    browser = Browser(linking.base_url)
    form = _consent_form(browser, authorize_params(client_id, Pkce.new(), linking.resource, scope="recipes.read"))
    original = dict(parse_qsl(form["fields"]["oauth_request"]))
    for change in ({"scope": "recipes.write search.read"}, {"state": "another-state"},
                   {"code_challenge": Pkce.new().challenge}):
        tampered = urlencode({**original, **change})
        response = browser.http.post(form["action"], data={**form["fields"], "oauth_request": tampered,
                                                           "decision": "approve"})
        assert response.status_code == 403, (change, response.text)
        assert "location" not in response.headers
    # Control: the untouched form still completes.
    done = browser.http.post(form["action"], data={**form["fields"], "decision": "approve"})
    assert done.status_code == 302 and "code" in query_of(done.headers["location"])


def test_a_login_ticket_posted_from_another_browser_is_refused(linking: Linking):
    params = authorize_params(steps.public_client(linking), Pkce.new(), linking.resource)
    victim = Browser(linking.base_url)
    form = _consent_form(victim, params)
    # Another browser with its own valid CSRF cookie and token pair for the very same request.
    attacker = Browser(linking.base_url)
    login = only_form(attacker.open_authorize(params).text)
    assert login["fields"]["oauth_request"] == form["fields"]["oauth_request"]
    response = attacker.http.post(form["action"], data={**form["fields"], "csrf_token": login["fields"]["csrf_token"],
                                                        "decision": "approve"})
    assert response.status_code == 403, response.text
    assert "location" not in response.headers
    done = victim.http.post(form["action"], data={**form["fields"], "decision": "approve"})
    assert done.status_code == 302 and "code" in query_of(done.headers["location"])


def test_a_login_ticket_whose_payload_was_edited_is_refused(linking: Linking):
    browser = Browser(linking.base_url)
    form = _consent_form(browser, authorize_params(steps.public_client(linking), Pkce.new(), linking.resource))
    ticket = form["fields"]["login_ticket"]
    payload, dot, mac = ticket.partition(".")
    assert dot and mac
    flipped = payload[:5] + ("A" if payload[5] != "A" else "B") + payload[6:]
    response = browser.http.post(form["action"], data={**form["fields"], "login_ticket": f"{flipped}.{mac}",
                                                       "decision": "approve"})
    assert response.status_code == 403, response.text
    assert "location" not in response.headers


# --- C. private_key_jwt: asymmetric algorithms only ------------------------------------------------------
def test_an_es256_assertion_without_kid_from_a_single_key_client_is_accepted(linking: Linking):
    code, pkce = steps.cimd_code(linking)
    assertion = _signed(linking.site.client_id, _token_url(linking), linking.site.key, "ES256")
    assert "kid" not in json.loads(base64.urlsafe_b64decode(assertion.split(".")[0] + "=="))
    response = token(linking.base_url, with_assertion(code_grant(code, pkce, linking.resource), assertion))
    assert response.status_code == 200, response.text
    assert _mcp_status(linking, response.json()["access_token"]) == 200


def test_an_hs256_assertion_keyed_on_a_random_secret_is_invalid_client(linking: Linking):
    code, pkce = steps.cimd_code(linking)
    secret = OctKey.import_key(secrets.token_bytes(32))
    assertion = _signed(linking.site.client_id, _token_url(linking), secret, "HS256", kid=linking.site.kid)
    steps.refused(token(linking.base_url, with_assertion(code_grant(code, pkce, linking.resource), assertion)),
             "invalid_client")


def test_an_unsigned_assertion_is_invalid_client(linking: Linking):
    code, pkce = steps.cimd_code(linking)
    for kid in (linking.site.kid, None):
        assertion = _unsigned(linking.site.client_id, _token_url(linking), kid=kid)
        steps.refused(token(linking.base_url, with_assertion(code_grant(code, pkce, linking.resource), assertion)),
                 "invalid_client")


def test_an_rs256_assertion_from_an_unpublished_rsa_key_is_invalid_client(linking: Linking):
    rogue = RSAKey.generate_key(2048, private=True)
    for kid in (linking.site.kid, None):
        assertion = _signed(linking.site.client_id, _token_url(linking), rogue, "RS256", kid=kid)
        steps.refused(_revoke_with(linking, assertion), "invalid_client")


def test_a_client_publishing_a_symmetric_key_still_cannot_authenticate_with_hmac(linking: Linking):
    """A client's JWKS is public: an HMAC 'key' in it would let anyone sign. Registered inline, such a key set is
    refused; served from the client's jwks_uri (fetched, never registered), only its asymmetric keys count."""
    secret = secrets.token_bytes(32)
    oct_key, ec_key = OctKey.import_key(secret), ECKey.generate_key("P-256", private=True)
    rsa_key = RSAKey.generate_key(2048, private=True)
    jwks = {"keys": [{**oct_key.as_dict(private=True), "kid": "oct-1"},
                     {**ec_key.as_dict(private=False), "kid": "ec-1"},
                     {**rsa_key.as_dict(private=False), "kid": "rsa-1"}]}
    inline = httpx.post(f"{linking.base_url}/register", json={
        "redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "private_key_jwt", "jwks": jwks}, timeout=15)
    assert (inline.status_code, inline.json()["error"]) == (400, "invalid_client_metadata"), inline.text
    name = secrets.token_hex(6)
    linking.site.key_sets[name] = jwks
    client_id = steps.register(linking, token_endpoint_auth_method="private_key_jwt",
                               jwks_uri=f"{linking.site.base_url}/oauth/keys/{name}.json")["client_id"]
    audience = _token_url(linking)
    steps.refused(_revoke_with(linking, _signed(client_id, audience, oct_key, "HS256", kid="oct-1")), "invalid_client")
    steps.refused(_revoke_with(linking, _signed(client_id, audience, oct_key, "HS512", kid="oct-1")), "invalid_client")
    # An RSA key the client did not publish, under the kid of one it did.
    rogue = RSAKey.generate_key(2048, private=True)
    steps.refused(_revoke_with(linking, _signed(client_id, audience, rogue, "RS256", kid="rsa-1")), "invalid_client")
    for alg in ("RS256", "PS256"):
        accepted = _revoke_with(linking, _signed(client_id, audience, rsa_key, alg, kid="rsa-1"))
        assert accepted.status_code == 200, (alg, accepted.text)
    # End to end with the EC key: code exchange authenticated by ES256.
    pkce = Pkce.new()
    code = steps.signed_in_code(linking, client_id, pkce)
    hmac_try = with_assertion(code_grant(code, pkce, linking.resource),
                              _signed(client_id, audience, oct_key, "HS256", kid="oct-1"))
    steps.refused(token(linking.base_url, hmac_try), "invalid_client")
    response = token(linking.base_url, with_assertion(code_grant(code, pkce, linking.resource),
                                                      _signed(client_id, audience, ec_key, "ES256", kid="ec-1")))
    assert response.status_code == 200, response.text


# --- D. refresh ----------------------------------------------------------------------------------------
def test_a_refresh_token_retried_three_times_in_the_grace_window_leaves_one_live_chain(linking: Linking):
    """The answers were lost (the client retried): the last successor carries the chain on."""
    client_id, tokens = steps.linked(linking)
    successors = []
    for _ in range(3):
        response = steps.refresh(linking, client_id, tokens["refresh_token"])
        assert response.status_code == 200, response.text
        successors.append(response.json()["refresh_token"])
    assert len(set(successors)) == 3
    last = steps.refresh(linking, client_id, successors[-1])
    assert last.status_code == 200, last.text
    assert _mcp_status(linking, last.json()["access_token"]) == 200


def test_a_stolen_refresh_token_replayed_in_the_grace_window_ends_the_grant_when_the_client_refreshes(
        linking: Linking):
    """The client rotates r0 -> r1; a thief replays r0 inside the grace window and gets r2 (r1 is replaced).
    When the client then uses r1, it is refused AND the grant ends: the thief's chain dies with it, instead of
    locking the client out and refreshing forever (RFC 9700 §4.14.2)."""
    client_id, tokens = steps.linked(linking)
    r0 = tokens["refresh_token"]
    client = steps.refresh(linking, client_id, r0).json()
    thief = steps.refresh(linking, client_id, r0).json()
    assert _mcp_status(linking, thief["access_token"]) == 200  # before the client shows up
    steps.refused(steps.refresh(linking, client_id, client["refresh_token"]), "invalid_grant")
    steps.refused(steps.refresh(linking, client_id, thief["refresh_token"]), "invalid_grant")
    assert _mcp_status(linking, thief["access_token"]) == 401


def test_a_refresh_token_retried_after_its_successor_was_itself_used_revokes_the_grant(linking: Linking):
    """Someone used R0 and already rotated what it got: a second use of R0, even inside the grace window,
    means two parties hold the grant's tokens. No parallel chain survives: the whole grant ends."""
    client_id, tokens = steps.linked(linking)
    r0 = tokens["refresh_token"]
    first = steps.refresh(linking, client_id, r0).json()
    second = steps.refresh(linking, client_id, first["refresh_token"]).json()
    steps.refused(steps.refresh(linking, client_id, r0), "invalid_grant")
    steps.refused(steps.refresh(linking, client_id, second["refresh_token"]), "invalid_grant")
    assert _mcp_status(linking, second["access_token"]) == 401


@pytest.mark.parametrize("resource", ["https://elsewhere.example/mcp", "http://h:abc/mcp"])
def test_a_refresh_for_another_resource_is_invalid_target(linking: Linking, resource: str):
    client_id, tokens = steps.linked(linking)
    steps.refused(steps.refresh(linking, client_id, tokens["refresh_token"], resource=resource), "invalid_target")
    # Nothing was rotated or revoked by the refused request.
    assert steps.refresh(linking, client_id, tokens["refresh_token"], resource=linking.resource).status_code == 200


def test_a_refresh_may_narrow_to_an_implied_scope(linking: Linking):
    client_id, tokens = steps.linked(linking, scope="recipes.write")
    assert tokens["scope"] == "recipes.write"
    response = steps.refresh(linking, client_id, tokens["refresh_token"], scope="recipes.read")
    assert response.status_code == 200, response.text
    narrowed = response.json()
    assert narrowed["scope"] == "recipes.read"
    assert _mcp_status(linking, narrowed["access_token"]) == 200  # list_saved_recipes needs recipes.read


def _confidential_link(linking: Linking) -> tuple[str, str, dict[str, Any]]:
    registered = steps.register(linking, token_endpoint_auth_method="client_secret_post", scope="recipes.write")
    client_id, client_secret = registered["client_id"], registered["client_secret"]
    pkce = Pkce.new()
    code = steps.signed_in_code(linking, client_id, pkce)
    data = code_grant(code, pkce, linking.resource, client_id=client_id)
    steps.refused(token(linking.base_url, data), "invalid_client", 401)  # the secret is required
    response = token(linking.base_url, {**data, "client_secret": client_secret})
    assert response.status_code == 200, response.text
    return client_id, client_secret, response.json()


def _introspect(linking: Linking, client_id: str, client_secret: str, value: str) -> dict[str, Any]:
    response = httpx.post(f"{linking.base_url}/introspect", data={
        "token": value, "client_id": client_id, "client_secret": client_secret}, timeout=15)
    assert response.status_code == 200, response.text
    return response.json()


def test_introspection_reports_a_refresh_token_rotated_before_the_grace_window_inactive(linking: Linking):
    client_id, client_secret, tokens = _confidential_link(linking)
    old = tokens["refresh_token"]
    rotated = token(linking.base_url, {"grant_type": "refresh_token", "refresh_token": old, "client_id": client_id,
                                       "client_secret": client_secret})
    assert rotated.status_code == 200, rotated.text
    new = rotated.json()["refresh_token"]
    assert _introspect(linking, client_id, client_secret, old)["active"] is True  # still in its grace window
    # The grace window as the clock would close it, for this token only.
    steps.sql(linking, "UPDATE oauth_refresh_tokens SET rotated_at = rotated_at - 3600 WHERE token_hash = :h",
              h=steps.digest(old))
    assert _introspect(linking, client_id, client_secret, old) == {"active": False}
    current = _introspect(linking, client_id, client_secret, new)
    assert current["active"] is True and current["token_type"] == "refresh_token"


def test_introspection_with_an_unknown_token_type_hint_searches_every_type(linking: Linking):
    client_id, client_secret, tokens = _confidential_link(linking)
    response = httpx.post(f"{linking.base_url}/introspect", data={
        "token": tokens["refresh_token"], "token_type_hint": "unknown_type", "client_id": client_id,
        "client_secret": client_secret})
    assert response.status_code == 200 and response.json()["active"] is True, response.text


def test_a_client_secret_post_client_links_end_to_end(linking: Linking):
    client_id, client_secret, tokens = _confidential_link(linking)
    assert tokens["token_type"] == "Bearer" and tokens["refresh_token"].startswith("rt_")
    assert _mcp_status(linking, tokens["access_token"]) == 200
    refreshed = token(linking.base_url, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                         "client_id": client_id, "client_secret": client_secret})
    assert refreshed.status_code == 200, refreshed.text


# --- E. accounts -----------------------------------------------------------------------------------------
def _users(linking: Linking, *args: str, stdin: str | None = None) -> str:
    env = {**linking.server.environ_used, "APP_DATABASE_URL": linking.server.database_url}
    done = subprocess.run([str(linking.server.python), "-m", "app", "users", *args], input=stdin, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_disabling_an_account_stops_its_sign_in_at_once_and_its_tokens_within_the_grant_cache_ttl(linking: Linking):
    username, password = f"carol-{secrets.token_hex(4)}", secrets.token_urlsafe(16)
    _users(linking, "create", username, "--password-stdin", stdin=password + "\n")
    client_id, tokens = steps.linked(linking, username=username, password=password)
    assert _mcp_status(linking, tokens["access_token"]) == 200  # the server now holds the grant's state
    disabled = _users(linking, "disable", username)
    # No Redis between the CLI and the server: the server's cached state of the grant lives out its TTL.
    assert f"its tokens stop working within {LINKING_GRANT_CACHE_TTL} s on every server" in disabled
    steps.refused_within(LINKING_GRANT_CACHE_TTL + 1, lambda: _mcp_status(linking, tokens["access_token"]))
    response = call_tool(linking.resource, "list_saved_recipes", token=tokens["access_token"])
    assert response.status_code == 401, response.text
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    steps.refused(steps.refresh(linking, client_id, tokens["refresh_token"]), "invalid_grant")
    browser = Browser(linking.base_url)
    form = only_form(browser.open_authorize(authorize_params(client_id, Pkce.new(), linking.resource)).text)
    refused = browser.http.post("/authorize", data={**form["fields"], "username": username, "password": password})
    _error_page(refused, 401)
    assert 'role="alert"' in refused.text and "login_ticket" not in refused.text


def test_enabling_a_disabled_account_again_does_not_bring_back_its_tokens(linking: Linking):
    username, password = f"dora-{secrets.token_hex(4)}", secrets.token_urlsafe(16)
    _users(linking, "create", username, "--password-stdin", stdin=password + "\n")
    client_id, tokens = steps.linked(linking, username=username, password=password)
    _users(linking, "disable", username)
    enabled = _users(linking, "enable", username)
    assert "its tokens of before stay revoked" in enabled
    assert _mcp_status(linking, tokens["access_token"]) == 401
    steps.refused(steps.refresh(linking, client_id, tokens["refresh_token"]), "invalid_grant")
    _, again = steps.linked(linking, username=username, password=password)  # it links again, and that works
    assert _mcp_status(linking, again["access_token"]) == 200


def test_a_token_response_carries_each_header_once(linking: Linking):
    """authlib's Cache-Control and Pragma beside ours were sent twice each; a strict client refuses that."""
    client_id, tokens = steps.linked(linking)
    response = steps.refresh(linking, client_id, tokens["refresh_token"])
    assert response.status_code == 200, response.text
    for name in ("cache-control", "pragma", "content-type"):
        assert len(response.headers.get_list(name)) == 1, (name, response.headers.get_list(name))
    assert response.headers["cache-control"] == "no-store" and response.headers["pragma"] == "no-cache"
    failed = steps.refresh(linking, client_id, "rt_not-a-token")
    assert len(failed.headers.get_list("cache-control")) == 1 and failed.status_code == 400


# --- F. concurrency --------------------------------------------------------------------------------------
def _in_parallel(count: int, send: Any) -> list[httpx.Response]:
    barrier = threading.Barrier(count)

    def one(_: int) -> httpx.Response:
        barrier.wait(timeout=30)
        return send()

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def test_parallel_redemptions_of_one_code_issue_exactly_once(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    data = code_grant(steps.signed_in_code(linking, client_id, pkce), pkce, linking.resource, client_id=client_id)
    responses = _in_parallel(6, lambda: token(linking.base_url, data))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [400] * 5, [(r.status_code, r.text) for r in responses]
    losers = [r for r in responses if r.status_code != 200]
    assert all(r.json()["error"] == "invalid_grant" for r in losers)
    winner = next(r for r in responses if r.status_code == 200).json()
    assert _mcp_status(linking, winner["access_token"]) == 200
    assert steps.refresh(linking, client_id, winner["refresh_token"]).status_code == 200


def test_parallel_assertions_with_one_jti_authenticate_exactly_once(linking: Linking):
    assertion = linking.site.assertion(_token_url(linking), jti="parallel-" + secrets.token_hex(6))
    responses = _in_parallel(6, lambda: _revoke_with(linking, assertion))
    assert all(r.status_code != 500 for r in responses), [(r.status_code, r.text) for r in responses]
    assert sorted(r.status_code for r in responses) == [200] + [400] * 5, [(r.status_code, r.text) for r in responses]
    assert all(r.json()["error"] == "invalid_client" for r in responses if r.status_code != 200)


# --- G. redirect URI omitted at /authorize -----------------------------------------------------------------
def test_a_redirect_uri_omitted_at_authorize_need_not_be_sent_to_token(linking: Linking):
    client_id, pkce = steps.public_client(linking), Pkce.new()
    params = authorize_params(client_id, pkce, linking.resource)
    params.pop("redirect_uri")
    location = Browser(linking.base_url).sign_in(params, "alice", PASSWORD)
    assert location.startswith(CHATGPT_REDIRECT + "?")
    data = code_grant(query_of(location)["code"], pkce, linking.resource, client_id=client_id)
    data.pop("redirect_uri")
    response = token(linking.base_url, data)
    assert response.status_code == 200, response.text
    assert _mcp_status(linking, response.json()["access_token"]) == 200
