"""The relying-party checks of upstream login (app/authserver/upstream.py) against a provider that lies.

The honest path runs against a certified provider in tests/e2e/test_upstream_login.py; the lies a certified
provider never tells (a wrong audience, a replayed nonce, ``alg: none``, a MAC keyed with the client secret,
another issuer in discovery, a UserInfo answer about someone else) are told here by a provider this test
serves on loopback and controls, reached through the real outbound guard.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import pytest
from joserfc import jws
from joserfc.jwk import OctKey, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from app.authserver.settings import AuthServerSettings
from app.authserver.upstream import DISCOVERY_TTL, Flow, NotAllowed, UpstreamError, UpstreamProvider
from app.authserver.upstream_config import parse_providers
from app.main import create_app
from app.net import OutboundGuard
from app.settings import SettingsError, load_part
from tests.serving import serving

# The provider is what is under test, not the database: SQLite only (the accounts it makes: test_upstream_accounts).
pytestmark = [pytest.mark.authserver, pytest.mark.any_database]

SECRET = "the-client-secret-of-the-relying-party"
FLOW = Flow(state="state-1", nonce="nonce-1", verifier="v" * 50)


def _json(document: dict[str, Any]) -> Response:
    # ASCII escapes, as many providers send: a lone surrogate then arrives as \ud800, which JSON allows.
    return Response(json.dumps(document), media_type="application/json")


@dataclass
class LyingProvider:
    base_url: str = ""
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True))
    published: list[RSAKey] = field(default_factory=list)
    claims: dict[str, Any] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)
    signer: Any = None
    discovery_issuer: str | None = None
    userinfo: dict[str, Any] = field(default_factory=dict)
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    jwks_fetches: int = 0

    def id_token(self) -> str:
        now = int(time.time())
        claims = {"iss": self.base_url, "sub": "person-1", "aud": "rp", "exp": now + 300, "iat": now,
                  "nonce": FLOW.nonce, **self.claims}
        claims = {k: v for k, v in claims.items() if v is not None}
        header = {"alg": "RS256", "kid": "k1", **self.header}
        if header["alg"] == "none":
            encode = lambda part: base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")  # noqa: E731
            return f"{encode(header)}.{encode(claims)}."
        # The payload as JSON with ASCII escapes (what jwt.encode cannot write for a lone surrogate).
        return jws.serialize_compact(header, json.dumps(claims).encode(), self.signer or self.key)

    def app(self) -> Starlette:
        async def discovery(_: Request) -> Response:
            return JSONResponse({
                "issuer": self.discovery_issuer or self.base_url, "authorization_endpoint": f"{self.base_url}/auth",
                "token_endpoint": f"{self.base_url}/token", "jwks_uri": f"{self.base_url}/jwks",
                "userinfo_endpoint": f"{self.base_url}/userinfo",
                "id_token_signing_alg_values_supported": ["RS256", "HS256", "none"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"]})

        async def jwks(_: Request) -> Response:
            self.jwks_fetches += 1
            return JSONResponse({"keys": [k.as_dict(private=False) for k in (self.published or [self.key])]})

        async def token(request: Request) -> Response:
            self.token_requests.append({"form": dict(await request.form()),
                                        "authorization": request.headers.get("authorization")})
            return _json({"access_token": "upstream-access", "token_type": "Bearer", "id_token": self.id_token()})

        async def userinfo(request: Request) -> Response:
            assert request.headers["authorization"] == "Bearer upstream-access"
            return _json({"sub": "person-1", "email": "p@corp.example", "email_verified": True, "name": "Pat",
                          **self.userinfo})

        return Starlette(routes=[Route("/.well-known/openid-configuration", discovery), Route("/jwks", jwks),
                                 Route("/token", token, methods=["POST"]), Route("/userinfo", userinfo)])


@pytest.fixture
def liar() -> Iterator[LyingProvider]:
    provider = LyingProvider()
    with serving(lambda base: provider.app()) as base_url:
        provider.base_url = base_url
        yield provider


def _relying_party(liar: LyingProvider, **entry: Any) -> UpstreamProvider:
    (config,) = parse_providers(json.dumps([{"id": "corp", "name": "Corp", "issuer": liar.base_url,
                                             "client_id": "rp", "client_secret": SECRET, **entry}]))
    guard = OutboundGuard(allowlist=[liar.base_url.removeprefix("http://")])
    return UpstreamProvider(config, guard, "http://127.0.0.1:1/login/corp/callback")


def _sign_in(rp: UpstreamProvider):
    async def run():
        found = await rp.discovery()
        tokens = await rp.redeem(found, "the-code", FLOW)
        return await rp.identity(found, tokens, FLOW)
    return anyio.run(run)


def test_an_honest_answer_is_the_identity_and_the_code_is_redeemed_with_pkce_and_basic_auth(liar):
    identity = _sign_in(_relying_party(liar))
    assert (identity.issuer, identity.subject, identity.email, identity.name) == (
        liar.base_url, "person-1", "p@corp.example", "Pat")
    [sent] = liar.token_requests
    assert sent["form"] == {"grant_type": "authorization_code", "code": "the-code",
                            "redirect_uri": "http://127.0.0.1:1/login/corp/callback", "code_verifier": FLOW.verifier}
    assert sent["authorization"] == "Basic " + base64.b64encode(f"rp:{SECRET}".encode()).decode()


@pytest.mark.parametrize(("claims", "header"), [
    ({"aud": "another-client"}, {}),
    ({"aud": ["rp", "another-client"]}, {}),  # several audiences and no azp naming us
    ({"iss": "https://someone-else.example"}, {}),
    ({"nonce": "a-nonce-of-another-flow"}, {}),
    ({"nonce": None}, {}),
    ({"exp": int(time.time()) - 3600}, {}),
    ({"iat": None}, {}),
    ({"sub": None}, {}),
    ({}, {"alg": "none"}),
    ({"azp": "another-client"}, {}),
    ({"sub": "person\ud800"}, {}),
], ids=["audience", "audiences-without-azp", "issuer", "nonce", "no-nonce", "expired", "no-iat", "no-sub",
        "alg-none", "azp-of-another-client", "surrogate-in-sub"])
def test_an_id_token_that_is_not_for_this_flow_is_refused(liar, claims, header):
    liar.claims, liar.header = claims, header
    with pytest.raises(UpstreamError, match="ID token"):
        _sign_in(_relying_party(liar))


def test_an_id_token_with_a_mac_keyed_by_the_client_secret_is_refused(liar):
    # HS256 with the secret: anyone who holds the secret (the relying party included) could mint identities.
    liar.header, liar.signer = {"alg": "HS256"}, OctKey.import_key(SECRET)
    with pytest.raises(UpstreamError, match="ID token"):
        _sign_in(_relying_party(liar))


def test_an_id_token_signed_by_a_key_not_in_the_jwks_is_refused(liar):
    liar.published = [RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)]
    with pytest.raises(UpstreamError, match="ID token"):
        _sign_in(_relying_party(liar))


def test_a_rotated_key_is_fetched_once_then_trusted(liar):
    rp = _relying_party(liar)
    _sign_in(rp)
    assert liar.jwks_fetches == 1
    liar.key = RSAKey.generate_key(2048, parameters={"kid": "k2"}, private=True)
    liar.header = {"kid": "k2"}
    identity = _sign_in(rp)
    assert identity.subject == "person-1" and liar.jwks_fetches == 2
    # Made-up key ids do not make every sign-in a JWKS fetch: one refetch a minute at most.
    liar.header = {"kid": "made-up"}
    with pytest.raises(UpstreamError, match="ID token"):
        _sign_in(rp)
    assert liar.jwks_fetches == 2


def test_several_audiences_are_accepted_when_azp_names_this_client(liar):
    liar.claims = {"aud": ["rp", "api"], "azp": "rp"}
    assert _sign_in(_relying_party(liar)).subject == "person-1"


def test_a_discovery_document_for_another_issuer_is_refused(liar):
    liar.discovery_issuer = "https://login.example"
    with pytest.raises(UpstreamError, match="names the issuer"):
        anyio.run(_relying_party(liar).discovery)


def test_a_userinfo_answer_about_another_subject_is_refused(liar):
    liar.userinfo = {"sub": "person-2"}
    with pytest.raises(UpstreamError, match="another subject"):
        _sign_in(_relying_party(liar))


def test_the_email_domain_allow_list_needs_a_verified_address_at_a_listed_domain(liar):
    rp = _relying_party(liar, email_domains=["corp.example"])
    assert _sign_in(rp).email == "p@corp.example"
    liar.userinfo = {"email_verified": False}
    with pytest.raises(NotAllowed, match="corp.example"):
        _sign_in(rp)
    liar.userinfo = {"email": "p@corp.example.evil.example", "email_verified": True}
    with pytest.raises(NotAllowed):
        _sign_in(rp)


def test_required_claims_admit_a_listed_tenant_or_group_only(liar):
    rp = _relying_party(liar, required_claims={"tid": ["tenant-a"], "groups": ["staff"]})
    liar.claims = {"tid": "tenant-a", "groups": ["interns", "staff"]}
    assert _sign_in(rp).subject == "person-1"
    liar.claims = {"tid": "tenant-b", "groups": ["staff"]}
    with pytest.raises(NotAllowed):
        _sign_in(rp)
    liar.claims = {"tid": "tenant-a"}  # no groups claim at all
    with pytest.raises(NotAllowed):
        _sign_in(rp)


def test_an_address_the_provider_marks_unverified_is_not_kept_and_control_characters_are_dropped(liar):
    liar.userinfo = {"email_verified": False, "name": "Pat\x00 \u202eNew\ud800\n"}
    identity = _sign_in(_relying_party(liar))
    assert identity.email is None and identity.name == "Pat New"
    # An address too long to keep whole is not kept cut: its cut could name a domain nobody verified.
    liar.userinfo = {"email": "a" * 241 + "@corp.example.evil.test"}
    assert _sign_in(_relying_party(liar)).email is None


def test_a_subject_with_a_control_character_is_refused(liar):
    liar.claims = {"sub": "person\x00-1"}
    with pytest.raises(UpstreamError, match="printable"):
        _sign_in(_relying_party(liar))


def test_a_provider_that_is_down_costs_one_fetch_then_its_failure_is_remembered(liar):
    rp = _relying_party(liar)
    rp.config = replace(rp.config, issuer="http://127.0.0.1:1")  # port 1 refuses at once
    rp.guard = OutboundGuard(allowlist=["127.0.0.1:1"])
    fetches = []
    real = rp.guard.fetch

    async def counted(url, **kw):
        fetches.append(url)
        return await real(url, **kw)
    rp.guard.fetch = counted  # type: ignore[method-assign]

    async def five():
        for _ in range(5):
            with pytest.raises(UpstreamError, match="could not be fetched"):
                await rp.discovery()
    anyio.run(five)
    assert len(fetches) == 1


def test_a_refresh_that_fails_serves_the_last_good_discovery_document(liar):
    rp = _relying_party(liar)
    first = anyio.run(rp.discovery)
    rp._discovered.value = (rp._discovered.value[0] - DISCOVERY_TTL - 1, first)  # expired, but good
    liar.discovery_issuer = "https://someone-else.example"  # the refresh is refused
    assert anyio.run(rp.discovery) == first


def _served(settings, tmp_path, liar_url: str, **entry: object) -> TestClient:
    own = load_part(AuthServerSettings, _env_file=None, oidc_providers=json.dumps([
        {"id": "corp", "name": "Corp", "issuer": liar_url, "client_id": "rp", "client_secret": SECRET, **entry}]))
    settings = settings.model_copy(update={"var_dir": str(tmp_path), "outbound_allowlist": [
        liar_url.removeprefix("http://")]})
    return TestClient(create_app(settings, parts=[own]), base_url=settings.base_url, follow_redirects=False)


def test_a_provider_that_cannot_be_reached_is_a_page_saying_so(settings, tmp_path, liar):
    liar.discovery_issuer = "https://someone-else.example"
    with _served(settings, tmp_path, liar.base_url) as http:
        page = http.get("/login/corp", params={"next": "account"})
    assert page.status_code == 503 and "Signing in with Corp is unavailable" in page.text


def test_a_provider_the_guard_would_refuse_is_refused_at_start_in_one_line(settings, tmp_path):
    own = load_part(AuthServerSettings, _env_file=None, oidc_providers=json.dumps([
        {"id": "corp", "name": "Corp", "issuer": "https://10.0.0.5", "client_id": "rp"}]))
    with pytest.raises(SettingsError) as refused:
        create_app(settings.model_copy(update={"var_dir": str(tmp_path)}), parts=[own])
    [line] = refused.value.lines
    assert line.startswith("APP_OIDC_PROVIDERS: entry corp: the outbound guard refuses its issuer") and \
        "APP_OUTBOUND_ALLOWLIST" in line


def test_a_provider_on_its_own_port_is_fetched_from_that_port(settings, tmp_path):
    own = load_part(AuthServerSettings, _env_file=None, oidc_providers=json.dumps([
        {"id": "corp", "name": "Corp", "issuer": "https://login.corp.example:8443", "client_id": "rp"}]))
    create_app(settings.model_copy(update={"var_dir": str(tmp_path)}), parts=[own])  # no refusal

