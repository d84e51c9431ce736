"""Sign-in through an upstream OpenID provider, end to end: npm ``oidc-provider`` (a certified implementation)
on loopback, the server configured by ``APP_OIDC_PROVIDERS`` as a deployment is, a ChatGPT-like client (CIMD +
private_key_jwt, and DCR) linking through it, and the ``/account`` page that lists and disconnects links."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from joserfc import jws

from tests.e2e.conftest import Linking
from tests.e2e.linking_steps import sql
from tests.e2e.oauth_client import (
    CHATGPT_REDIRECT,
    Browser,
    ClientSite,
    Pkce,
    authorize_params,
    call_tool,
    code_grant,
    only_form,
    query_of,
    token,
    with_assertion,
)
from tests.e2e.openid_peer import openid_provider, through_provider
from tests.e2e.server import LiveServer
from tests.serving import serving

pytestmark = [pytest.mark.demo("recipes"), pytest.mark.authserver, pytest.mark.any_database]
SECRET = "corp-client-secret-0123456789"
PEOPLE = {
    "ann": {"email": "ann@corp.example", "email_verified": True, "name": "Ann Upstream"},
    "ben": {"email": "ben@corp.example", "email_verified": True, "name": "Ben Upstream"},
    "eve": {"email": "eve@elsewhere.example", "email_verified": True, "name": "Eve Outsider"},
}


@dataclass
class Federated(Linking):
    """The linking server of tests/e2e/conftest.py, with its upstream provider's issuer."""

    issuer: str = ""


@contextmanager
def _federation(database_url: str, log: Path, issued: Path | None = None, **env: str) -> Iterator[Federated]:
    site = ClientSite()
    server = LiveServer(database_url, log)
    callbacks = {name: f"{server.base_url}/login/{name}/callback" for name in ("corp", "partners")}
    clients = [{"client_id": "mcp-app", "client_secret": SECRET, "redirect_uris": [callbacks["corp"]]},
               {"client_id": "mcp-partners", "redirect_uris": [callbacks["partners"]],
                "token_endpoint_auth_method": "client_secret_post", "client_secret": SECRET + "-p"}]
    with serving(lambda base: site.app()) as site_url, openid_provider(clients, PEOPLE, issued) as issuer:
        site.base_url = site_url
        providers = [
            # The secret of this one comes from its own variable, as a deployment keeps it.
            {"id": "corp", "name": "Corp SSO", "issuer": issuer, "client_id": "mcp-app"},
            {"id": "partners", "name": "Partners", "issuer": issuer, "client_id": "mcp-partners",
             "client_secret": SECRET + "-p", "email_domains": ["corp.example"]},
        ]
        server.extra_env = {
            "APP_VAR_DIR": str(log.parent / "var"),
            "APP_OAUTH_CIMD_HOSTS": "127.0.0.1,localhost",
            "APP_OUTBOUND_ALLOWLIST": f"{site_url.removeprefix('http://')},{issuer.removeprefix('http://')}",
            "APP_OIDC_PROVIDERS": json.dumps(providers),
            "APP_OIDC_CORP_CLIENT_SECRET": SECRET,
            "APP_LIMIT_REGISTRATIONS_PER_ADDRESS": "1000/hour",
            "APP_LIMIT_REGISTRATIONS_PER_NETWORK": "1000/hour",
            # Every call reads its grant: the record of its use, to the hour, is what the account page test sets
            # by hand and reads back (a cached grant state is read again within its TTL: test_revocation_bound.py).
            "APP_OAUTH_GRANT_CACHE_TTL": "0",
            **env,
        }
        server.start()
        try:
            yield Federated(server, site, log.parent / "var", issuer)
        finally:
            server.stop()


@pytest.fixture(scope="module")
def federated(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federated]:
    with _federation(database_url, tmp_path_factory.mktemp("upstream") / "server.log") as federation:
        yield federation


def _browser(base: str) -> httpx.Client:
    return httpx.Client(base_url=base, follow_redirects=False, timeout=20, headers={"accept-language": "en"})


def _links(html: str) -> dict[str, str]:
    return {name: href.replace("&amp;", "&") for href, name in
            re.findall(r'<a class="provider" href="([^"]+)">Continue with ([^<]+)</a>', html)}


def _link(f: Federated, client_id: str, pkce: Pkce, person: str, provider: str = "Corp SSO") -> str:
    """Authorize -> "Continue with <provider>" -> the provider's login -> our consent -> the client's redirect."""
    http = _browser(f.base_url)
    page = http.get("/authorize", params=authorize_params(client_id, pkce, f.resource, scope="recipes.write",
                                                          state="st-up"))
    assert page.status_code == 200, page.text
    consent_page = through_provider(http, _links(page.text)[provider], person)
    assert consent_page.status_code == 200, consent_page.text
    assert str(consent_page.url).startswith(f"{f.base_url}/login/")
    consent = only_form(consent_page.text)
    done = http.post(consent["action"], data={**consent["fields"], "decision": "approve"})
    assert done.status_code == 302, done.text
    callback = query_of(done.headers["location"])
    assert callback["state"] == "st-up" and callback["iss"] == f.base_url
    return callback["code"]


def _cimd_link(f: Federated, person: str) -> dict:
    pkce = Pkce.new()
    code = _link(f, f.site.client_id, pkce, person)
    response = token(f.base_url, with_assertion(code_grant(code, pkce, f.resource),
                                                f.site.assertion(f"{f.base_url}/token")))
    assert response.status_code == 200, response.text
    return response.json()


def _dcr_link(f: Federated, person: str, provider: str = "Corp SSO") -> dict:
    registered = httpx.post(f"{f.base_url}/register", json={
        "client_name": "Another MCP client", "redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "none",
        "scope": "recipes.write"}, timeout=15).json()
    pkce = Pkce.new()
    code = _link(f, registered["client_id"], pkce, person, provider)
    response = token(f.base_url, code_grant(code, pkce, f.resource, client_id=registered["client_id"]))
    assert response.status_code == 200, response.text
    return response.json()


def _grant_of(access: str) -> str:
    return json.loads(jws.extract_compact(access.encode()).payload)["grant"]


def _profile(f: Federated, access: str) -> dict:
    body = call_tool(f.resource, "get_account_profile", token=access).json()["result"]
    assert body["isError"] is False, body
    return body["structuredContent"]


def test_chatgpt_links_through_an_upstream_provider_and_the_account_follows_the_upstream_subject(
        federated: Federated):
    f = federated
    first = _cimd_link(f, "ann")
    ann = _profile(f, first["access_token"])
    assert (ann["name"], ann["email"]) == ("Ann Upstream", "ann@corp.example")
    rows = sql(f, "SELECT account_id, provider FROM account_identities WHERE issuer = :i AND subject = 'ann'",
               i=f.issuer)
    assert rows == [(ann["id"], "corp")]
    # A second link by the same upstream person (another client, DCR) reaches the same account, made once.
    second = _dcr_link(f, "ann")
    assert _profile(f, second["access_token"])["id"] == ann["id"]
    # The other provider entry names the same issuer: the same person is the same account there too.
    third = _dcr_link(f, "ann", provider="Partners")
    assert _profile(f, third["access_token"])["id"] == ann["id"]
    assert sql(f, "SELECT count(*) FROM account_identities WHERE subject = 'ann'") == [(1,)]
    # Another upstream person is another account.
    ben = _profile(f, _cimd_link(f, "ben")["access_token"])
    assert ben["id"] != ann["id"] and ben["email"] == "ben@corp.example"
    # The account opens the tools the grant's scope allows.
    saved = call_tool(f.resource, "save_recipe", {"title": "Upstream soup"}, token=first["access_token"]).json()
    assert saved["result"]["isError"] is False, saved
    # No password opens an account made upstream, and none is stored.
    assert sql(f, "SELECT password_hash FROM accounts WHERE id = :a", a=ann["id"]) == [(None,)]


def test_an_allow_list_of_email_domains_refuses_other_people_and_makes_no_account(federated: Federated):
    f = federated
    http = _browser(f.base_url)
    page = http.get("/authorize", params=authorize_params(f.site.client_id, Pkce.new(), f.resource,
                                                          scope="recipes.write"))
    refused = through_provider(http, _links(page.text)["Partners"], "eve")
    assert refused.status_code == 403 and "corp.example" in refused.text
    assert sql(f, "SELECT count(*) FROM account_identities WHERE subject = 'eve'") == [(0,)]


def test_a_callback_without_this_browsers_flow_is_refused(federated: Federated):
    f = federated
    victim, attacker = _browser(f.base_url), _browser(f.base_url)
    page = attacker.get("/authorize", params=authorize_params(f.site.client_id, Pkce.new(), f.resource))
    start = attacker.get(_links(page.text)["Corp SSO"])
    assert start.status_code == 303
    # The attacker's half-done sign-in, replayed in another browser (login CSRF): no flow cookie matches it.
    location = start.headers["location"]
    state = query_of(location)["state"]
    forged = victim.get(f"/login/corp/callback?code=anything&state={state}")
    assert forged.status_code == 400 and "expired" in forged.text
    tampered = attacker.get(f"/login/corp/callback?code=anything&state={state}x")
    assert tampered.status_code == 400
    # The flow belongs to its provider's callback: another provider's callback with its state finds no flow.
    attacker.get(_links(page.text)["Corp SSO"])
    assert attacker.get(f"/login/partners/callback?code=anything&state={state}").status_code == 400


def test_a_callback_reloaded_after_it_finished_is_refused(federated: Federated):
    f = federated
    http = _browser(f.base_url)
    page = http.get("/authorize", params=authorize_params(f.site.client_id, Pkce.new(), f.resource,
                                                          scope="recipes.write"))
    consent_page = through_provider(http, _links(page.text)["Corp SSO"], "ann")
    assert consent_page.status_code == 200
    reloaded = http.get(str(consent_page.url))  # the flow was single use: its cookie is gone
    assert reloaded.status_code == 400 and "expired" in reloaded.text


def test_the_account_page_lists_a_link_and_disconnect_ends_it_at_once(federated: Federated):
    f = federated
    kept, ended = _cimd_link(f, "ben"), _dcr_link(f, "ben")
    _profile(f, kept["access_token"])  # its first use
    http = _browser(f.base_url)
    login = http.get("/account")
    assert login.status_code == 200 and "Continue with Corp SSO" in login.text
    page = through_provider(http, _links(login.text)["Corp SSO"], "ben")
    assert page.status_code == 200 and str(page.url) == f"{f.base_url}/account", page.text
    assert "Ben Upstream" in page.text and "ChatGPT" in page.text and "Another MCP client" in page.text
    # The call above was the kept grant's first use: recorded (to the hour), shown; the other one's not yet.
    sections = re.findall(r'<section class="grant">(.*?)</section>', page.text, re.S)
    assert [("Last used on" in x, "Not used yet" in x) for x in sections if "Another MCP client" in x] == [
        (False, True)]
    assert any("Last used on" in x for x in sections if "ChatGPT" in x)
    grant_id = _grant_of(ended["access_token"])
    # Kept to the hour: a call within the hour of the last record writes nothing; one after it, once.
    half_an_hour_ago, over_an_hour_ago = int(time.time()) - 1800, int(time.time()) - 3700
    sql(f, "UPDATE oauth_grants SET last_used_at = :t WHERE id = :g", t=half_an_hour_ago, g=grant_id)
    _profile(f, ended["access_token"])
    assert sql(f, "SELECT last_used_at FROM oauth_grants WHERE id = :g", g=grant_id) == [(half_an_hour_ago,)]
    sql(f, "UPDATE oauth_grants SET last_used_at = :t WHERE id = :g", t=over_an_hour_ago, g=grant_id)
    _profile(f, ended["access_token"])
    [(recorded,)] = sql(f, "SELECT last_used_at FROM oauth_grants WHERE id = :g", g=grant_id)
    assert recorded >= over_an_hour_ago + 3600
    forms = re.findall(r'<form method="post" action="/account/disconnect">(.*?)</form>', page.text, re.S)
    fields = next(dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form)) for form in forms if grant_id in form)
    done = http.post("/account/disconnect", data=fields)
    assert done.status_code == 303 and done.headers["location"] == "/account?done=disconnected"
    assert call_tool(f.resource, "get_account_profile", token=ended["access_token"]).status_code == 401
    assert _profile(f, kept["access_token"])["name"] == "Ben Upstream"  # the other link stays
    after = http.get("/account?done=disconnected")
    assert "Another MCP client" not in after.text and "The app was disconnected" in after.text
    # Disconnect without this page's CSRF token (a forged form of another site's): refused, nothing ended.
    kept_grant = _grant_of(kept["access_token"])
    assert http.post("/account/disconnect", data={"grant": kept_grant}).status_code == 403
    assert _profile(f, kept["access_token"])["name"] == "Ben Upstream"
    # Sign out ends the session itself: a copy of the cookie taken before opens nothing after.
    copied = http.cookies.get("account_session")
    signed_out = http.post("/account/sign-out", data={"csrf_token": fields["csrf_token"]})
    assert signed_out.status_code == 303
    assert "Continue with Corp SSO" in http.get("/account").text
    replayed = _browser(f.base_url)
    replayed.cookies.set("account_session", copied, domain="127.0.0.1", path="/account")
    again = replayed.get("/account")
    assert again.status_code == 200 and "Continue with Corp SSO" in again.text and "Ben Upstream" not in again.text


def test_a_password_account_signs_in_to_the_account_page(federated: Federated):
    f = federated
    http = _browser(f.base_url)
    login = http.get("/account")
    form = next(fm for fm in re.findall(r'<form method="post" action="/account/login">(.*?)</form>', login.text,
                                        re.S))
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form))
    wrong = http.post("/account/login", data={**fields, "username": "alice", "password": "not-it-at-all"})
    assert wrong.status_code == 401
    done = http.post("/account/login", data={**fields, "username": "alice", "password": "demo-password"})
    assert done.status_code == 303, done.text
    page = http.get("/account")
    assert page.status_code == 200 and "Alice Liddell" in page.text


def test_with_password_login_off_only_the_providers_sign_in(database_url: str, tmp_path: Path):
    with _federation(database_url, tmp_path / "server.log", APP_PASSWORD_LOGIN="false") as f:
        http = _browser(f.base_url)
        page = http.get("/authorize", params=authorize_params(f.site.client_id, Pkce.new(), f.resource,
                                                              scope="recipes.write"))
        assert page.status_code == 200 and 'name="password"' not in page.text and "Continue with Corp SSO" in page.text
        # A password posted anyway (the form of before, a script) opens nothing, even a right one.
        refused = http.post("/authorize", data={"oauth_request": "x", "username": "alice",
                                                "password": "demo-password"})
        assert refused.status_code == 403 and "turned off" in refused.text
        assert "<form" not in http.get("/account").text  # no password form, so no CSRF token to send either
        off = http.post("/account/login", data={"username": "alice", "password": "demo-password"})
        # Refused as turned off (not as a form without its token, which says the form expired).
        assert off.status_code == 403 and "turned off" in off.text and "expired" not in off.text
        tokens = _cimd_link(f, "ann")
        assert _profile(f, tokens["access_token"])["email"] == "ann@corp.example"


def test_at_debug_level_no_token_code_assertion_secret_or_password_reaches_the_log(database_url: str,
                                                                                    tmp_path: Path):
    """Every credential that crosses the server in a working day, with APP_LOG_LEVEL=debug: an upstream sign-in
    (its code, our client secret to the provider, the ID token), a CIMD client's code grant with its assertion,
    a refresh, a revocation, a confidential DCR client with its secret, a password sign-in, the /account
    session. None of them may be in the log, at any level."""
    seen: list[str] = [SECRET, SECRET + "-p", "demo-password"]

    def record(request: httpx.Request) -> None:  # every code and state our browsers carry
        seen.extend(value for name, value in query_of(str(request.url)).items() if name in ("code", "state"))

    upstream_log = tmp_path / "upstream-tokens.jsonl"
    with _federation(database_url, tmp_path / "server.log", upstream_log, APP_LOG_LEVEL="debug") as f:
        # A CIMD client through the upstream provider: code, PKCE verifier, assertion, tokens.
        http = httpx.Client(base_url=f.base_url, follow_redirects=False, timeout=20,
                            headers={"accept-language": "en"}, event_hooks={"request": [record]})
        pkce = Pkce.new()
        page = http.get("/authorize", params=authorize_params(f.site.client_id, pkce, f.resource,
                                                              scope="recipes.write"))
        consent_page = through_provider(http, _links(page.text)["Corp SSO"], "ann")
        consent = only_form(consent_page.text)
        done = http.post(consent["action"], data={**consent["fields"], "decision": "approve"})
        code = query_of(done.headers["location"])["code"]
        assertions = [f.site.assertion(f"{f.base_url}/token") for _ in range(3)]
        issued = token(f.base_url, with_assertion(code_grant(code, pkce, f.resource), assertions[0])).json()
        refreshed = token(f.base_url, with_assertion({"grant_type": "refresh_token", "resource": f.resource,
                                                      "refresh_token": issued["refresh_token"]}, assertions[1]))
        assert refreshed.status_code == 200, refreshed.text
        revoked = httpx.post(f"{f.base_url}/revoke", data=with_assertion(
            {"token": refreshed.json()["refresh_token"]}, assertions[2]), timeout=15)
        assert revoked.status_code == 200, revoked.text
        seen += [code, pkce.verifier, *assertions, issued["access_token"], issued["refresh_token"],
                 refreshed.json()["access_token"], refreshed.json()["refresh_token"]]
        # A confidential DCR client, linked with a password: its secret on /token (HTTP Basic).
        registered = httpx.post(f"{f.base_url}/register", json={
            "client_name": "Confidential client", "redirect_uris": [CHATGPT_REDIRECT],
            "token_endpoint_auth_method": "client_secret_basic"}, timeout=15).json()
        pkce = Pkce.new()
        browser = Browser(f.base_url)
        code = query_of(browser.sign_in(authorize_params(registered["client_id"], pkce, f.resource,
                                                         scope="recipes.write"), "alice", "demo-password"))["code"]
        basic = token(f.base_url, code_grant(code, pkce, f.resource),
                      auth=(registered["client_id"], registered["client_secret"])).json()
        seen += [registered["client_secret"], code, pkce.verifier, basic["access_token"], basic["refresh_token"],
                 *(c.value for c in browser.http.cookies.jar if c.value)]
        # The /account page, signed in with the password: its session cookie.
        account = _browser(f.base_url)
        login = account.get("/account")
        form = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', login.text))
        signed_in = account.post("/account/login", data={**form, "username": "alice", "password": "demo-password"})
        assert signed_in.status_code == 303, signed_in.text
        assert _profile(f, basic["access_token"])["id"]
        seen += [c.value for c in [*http.cookies.jar, *account.cookies.jar] if c.value]
        events = f.server.settled_log()
    # What the provider issued to this server: its ID token, access token (opaque here) and refresh token.
    upstream = [json.loads(line) for line in upstream_log.read_text().splitlines()]
    assert upstream and all("id_token" in t and "access_token" in t for t in upstream)
    seen += [t[k] for t in upstream for k in ("id_token", "access_token", "refresh_token") if k in t]
    text = (tmp_path / "server.log").read_text()
    # The level was debug (the test would pass on a quieter log), and the flows above were logged.
    assert any(e.get("level") == "debug" for e in events)
    logged = {e.get("event") for e in events}
    assert {"oauth.client_registered", "oauth.upstream_sign_in", "oauth.revoked", "oauth.token_issued"} <= logged
    leaked = sorted({value[:12] + "…" for value in seen if len(value) >= 8 and value in text})
    assert leaked == [], leaked
