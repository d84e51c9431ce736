"""Open registration (DCR) that cannot pile up: a bounded document, a network's fair share of the hourly total,
and self-registered clients that expire unless someone links through them; over real HTTP, on the configured
database."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from joserfc.jwk import ECKey
from sqlalchemy import create_engine, text

from app.limits import address_key, network_key
from tests.e2e.oauth_client import Browser, Pkce, authorize_params, code_grant, query_of, token
from tests.integration.test_client_documents import REGISTRATION, auth_server

pytestmark = pytest.mark.authserver


def _sql(url: str, statement: str, **params: object) -> list[tuple]:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            result = conn.execute(text(statement), params)
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def _register(base_url: str, forwarded_for: str, body: dict | None = None) -> httpx.Response:
    return httpx.post(f"{base_url}/register", json=body or REGISTRATION, headers={"x-forwarded-for": forwarded_for},
                      timeout=10)


def test_addresses_are_counted_by_network_so_a_handful_cannot_take_the_total(database_url: str, tmp_path: Path):
    # Scaled down from 60 an address, 100 a network, 1000 in all: 17 addresses of one /24 used to fill the total.
    with auth_server(database_url, tmp_path / "var", trusted_proxies="127.0.0.1",
                     limit_registrations_per_address="2/hour", limit_registrations_per_network="3/hour",
                     limit_registrations_total="7/hour") as base_url:
        one_network = [_register(base_url, f"198.51.100.{i}") for i in (1, 1, 2, 3, 4)]
        v6 = [_register(base_url, f"2001:db8:7:{i}::1") for i in (1, 2, 3, 4)]  # four /64s of one /48
        elsewhere = [_register(base_url, "203.0.113.1"), _register(base_url, "192.0.2.1")]
    assert [r.status_code for r in one_network] == [201, 201, 201, 429, 429]
    assert "this network" in one_network[3].json()["error_description"]
    assert [r.status_code for r in v6] == [201, 201, 201, 429]
    assert "this network" in v6[3].json()["error_description"]
    # The other networks still had their share: the total is reached only now.
    assert [r.status_code for r in elsewhere] == [201, 429]
    assert "all addresses" in elsewhere[1].json()["error_description"]


def test_network_keys_are_an_ipv4_slash_24_and_an_ipv6_slash_48():
    assert network_key("198.51.100.77") == "198.51.100.0/24"
    assert network_key("::ffff:198.51.100.77") == "198.51.100.0/24"
    assert network_key("2001:db8:7:1::1") == network_key("2001:db8:7:ffff::2") == "2001:db8:7::/48"
    assert address_key("2001:db8:7:1::1") != address_key("2001:db8:7:2::1")
    assert network_key("not an address") == "not an address"


def test_a_registration_document_is_bounded_in_size_members_and_redirect_uris(database_url: str, tmp_path: Path):
    # The attacker's registration: 42,777 bytes, 10 long redirect URIs and 150 keys.
    uris = [f"https://chatgpt.com/{i}/" + "a" * 2000 for i in range(10)]
    huge = {"redirect_uris": uris, "token_endpoint_auth_method": "none",
            **{f"x_{i:03}": "v" * 120 for i in range(147)}}
    members = {**REGISTRATION, **{f"x_{i}": 1 for i in range(40)}}
    long_uri = {**REGISTRATION, "redirect_uris": ["https://chatgpt.com/" + "a" * 2100]}
    with auth_server(database_url, tmp_path / "var") as base_url:
        before = _sql(database_url, "SELECT count(*) FROM oauth_clients")
        answers = [httpx.post(f"{base_url}/register", json=body, timeout=10) for body in (huge, members, long_uri)]
        after = _sql(database_url, "SELECT count(*) FROM oauth_clients")
    assert [(r.status_code, r.json()["error"]) for r in answers] == [
        (413, "invalid_client_metadata"), (400, "invalid_client_metadata"), (400, "invalid_redirect_uri")]
    assert "16384 bytes" in answers[0].json()["error_description"]
    assert "at most 40" in answers[1].json()["error_description"]
    assert "at most 2048 characters" in answers[2].json()["error_description"]
    assert after == before  # nothing stored


def test_a_client_no_one_linked_through_expires_and_one_someone_linked_with_stays(database_url: str, tmp_path: Path):
    expiry = "SELECT expires_at FROM oauth_clients WHERE client_id = :c"
    with auth_server(database_url, tmp_path / "var") as base_url:
        registered = time.time()
        unused = _register(base_url, "127.0.0.1").json()["client_id"]
        used = _register(base_url, "127.0.0.1").json()["client_id"]
        [(unused_expiry,)] = _sql(database_url, expiry, c=unused)
        assert registered + 24 * 3600 - 5 <= unused_expiry <= time.time() + 24 * 3600
        # The day is nearly over for one and over for the other (the rows are moved on: nobody waits 24 hours).
        _sql(database_url, "UPDATE oauth_clients SET expires_at = :t WHERE client_id = :c", t=int(time.time()) + 20,
             c=used)
        resource, pkce = f"{base_url}/mcp", Pkce.new()
        code = query_of(Browser(base_url).sign_in(authorize_params(used, pkce, resource, scope=""), "alice",
                                                  "demo-password"))["code"]
        # The code it was given holds it past the code's own expiry (60 s), retry window included.
        [(held,)] = _sql(database_url, expiry, c=used)
        assert held >= time.time() + 60
        _sql(database_url, "UPDATE oauth_clients SET expires_at = :t WHERE client_id = :c", t=int(time.time()) - 1,
             c=unused)
        linked = token(base_url, code_grant(code, pkce, resource, client_id=used))
        assert linked.status_code == 200, linked.text
        # The unused one is refused at once, and gone from the table at the next registration's sweep.
        page = Browser(base_url).open_authorize(authorize_params(unused, Pkce.new(), resource))
        assert page.status_code == 400 and "location" not in page.headers
        count = "SELECT count(*) FROM oauth_clients WHERE client_id = :c"
        assert _sql(database_url, count, c=unused) == [(1,)]
        other = _register(base_url, "127.0.0.1").json()["client_id"]
        assert _sql(database_url, count, c=unused) == [(0,)]
        # The linked one stays for good: no expiry, however old, and it links again; the code that gives it
        # sweeps too.
        _sql(database_url, "UPDATE oauth_clients SET expires_at = :t WHERE client_id = :c", t=int(time.time()) - 1,
             c=other)
        assert _sql(database_url, expiry, c=used) == [(None,)]
        _sql(database_url, "UPDATE oauth_clients SET created_at = created_at - 90000 WHERE client_id = :c", c=used)
        again = Browser(base_url).sign_in(authorize_params(used, Pkce.new(), resource, scope=""), "alice",
                                          "demo-password")
        assert "code" in query_of(again)
        assert _sql(database_url, count, c=other) == [(0,)]
        assert _sql(database_url, expiry, c=used) == [(None,)]


def test_a_registration_with_an_unpaired_surrogate_is_invalid_client_metadata(database_url: str, tmp_path: Path):
    body = json.dumps({**REGISTRATION, "client_name": "a\ud800b"}).encode()  # the \ud800 escape: valid JSON text
    with auth_server(database_url, tmp_path / "var") as base_url:
        response = httpx.post(f"{base_url}/register", content=body, headers={"content-type": "application/json"},
                              timeout=10)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_client_metadata"
    assert "unpaired surrogate" in response.json()["error_description"]


def test_registrations_a_database_or_a_browser_could_not_take_are_refused_before_anything_is_stored(
        database_url: str, tmp_path: Path):
    private = ECKey.generate_key("P-256", private=True).as_dict(private=True)
    key = {name: value for name, value in private.items() if name != "d"}
    jwt_client = {**REGISTRATION, "token_endpoint_auth_method": "private_key_jwt"}
    bodies = {
        "NaN in the jwks": json.dumps({**jwt_client, "jwks": {"keys": [{**key, "junk": float("nan")}]}}).encode(),
        "keys that are not a list": json.dumps({**jwt_client, "jwks": {"keys": 5}}).encode(),
        "a control character in a redirect URI": json.dumps({**REGISTRATION,
                                                            "redirect_uris": ["https://a.example/cb\x01"]}).encode(),
        "a port out of range": json.dumps({**REGISTRATION, "redirect_uris": ["https://a.example:99999/cb"]}).encode(),
        "a private key": json.dumps({**jwt_client, "jwks": {"keys": [private]}}).encode(),
        "a symmetric key": json.dumps({**jwt_client, "jwks": {"keys": [{"kty": "oct", "k": "c2VjcmV0LXNlY3JldA"}]}}
                                      ).encode(),
    }
    with auth_server(database_url, tmp_path / "var") as base_url:
        before = _sql(database_url, "SELECT count(*) FROM oauth_clients")
        answers = {name: httpx.post(f"{base_url}/register", content=body,
                                    headers={"content-type": "application/json"}, timeout=10)
                   for name, body in bodies.items()}
        public = httpx.post(f"{base_url}/register", json={**jwt_client, "jwks": {"keys": [key]}}, timeout=10)
        after = _sql(database_url, "SELECT count(*) FROM oauth_clients")
    assert {name: (r.status_code, r.json().get("error")) for name, r in answers.items()} == {
        "NaN in the jwks": (400, "invalid_client_metadata"),
        "keys that are not a list": (400, "invalid_client_metadata"),
        "a control character in a redirect URI": (400, "invalid_redirect_uri"),
        "a port out of range": (400, "invalid_redirect_uri"),
        "a private key": (400, "invalid_client_metadata"),
        "a symmetric key": (400, "invalid_client_metadata")}
    assert "NaN" in answers["NaN in the jwks"].json()["error_description"]
    assert public.status_code == 201, public.text  # the same key without its private part
    assert after == [(before[0][0] + 1,)]
