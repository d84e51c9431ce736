"""Pure pieces of the built-in authorization server: scopes, resource indicators, client metadata, caching
headers, signed browser values, passwords, clients, and signing keys. No network, no database."""

from __future__ import annotations

import base64
import dataclasses
import email.utils
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from app.auth.scopes import Scope, ScopeCatalog
from app.authserver.clients import (
    AUTH_METHODS,
    CIMD_AUTH_METHODS,
    Client,
    ClientMetadataError,
    cache_lifetime,
    digest,
    validate_metadata,
)
from app.authserver.forms import Signer
from app.authserver.keys import KEYS_FILE, KeyMaterialError, KeyRing, load_keyring
from app.authserver.passwords import DUMMY_HASH, hash_password, verify_password
from app.authserver.protocol import normalise_resource
from app.authserver.settings import AuthServerSettings
from app.secret import load_secret
from app.settings import SettingsError, load_part, load_settings

pytestmark = pytest.mark.authserver

READ = Scope("notes.read", {"en": "Read your notes", "pt": "Ler as suas notas"})
WRITE = Scope("notes.write", {"en": "Edit your notes"}, implies=("notes.read",))
ADMIN = Scope("notes.admin", {"en": "Manage your notes"}, implies=("notes.write",))
CATALOG = ScopeCatalog([READ, WRITE, ADMIN])
CALLBACK = "https://chatgpt.com/connector_platform_oauth_redirect"


# -- scopes ----------------------------------------------------------------------------------------------------


def test_expand_adds_implied_scopes_transitively_once():
    assert CATALOG.expand(["notes.admin"]) == ["notes.admin", "notes.write", "notes.read"]
    assert CATALOG.expand(["notes.read", "notes.admin", "notes.read"]) == ["notes.read", "notes.admin",
                                                                           "notes.write"]


def test_expand_keeps_a_scope_that_implies_nothing_alone():
    assert CATALOG.expand(["notes.read"]) == ["notes.read"]


def test_known_drops_unknown_and_duplicate_names_keeping_order():
    assert CATALOG.known(["bogus", "notes.write", "notes.read", "notes.write", "openid"]) == ["notes.write",
                                                                                             "notes.read"]


def test_the_same_scope_declared_twice_identically_is_accepted():
    catalog = ScopeCatalog([READ, Scope("notes.read", {"en": "Read your notes", "pt": "Ler as suas notas"})])
    assert catalog.names == ["notes.read"]


def test_the_same_scope_declared_twice_differently_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        ScopeCatalog([READ, Scope("notes.read", {"en": "Read everything"})])


def test_a_scope_implying_an_undeclared_scope_is_refused():
    with pytest.raises(ValueError, match="implies unknown scopes: notes.read"):
        ScopeCatalog([WRITE])


def test_a_scope_without_an_english_description_is_refused():
    with pytest.raises(ValueError, match="English"):
        Scope("notes.read", {"pt": "Ler"})


def test_describe_picks_the_regional_variants_language():
    assert READ.describe("pt-BR") == "Ler as suas notas"


def test_describe_falls_back_to_english():
    assert READ.describe("de-DE") == "Read your notes"
    assert WRITE.describe("pt-BR") == "Edit your notes"


# -- resource indicators ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("HTTPS://Example.COM/mcp", "https://example.com/mcp"),
        ("https://example.com:443/mcp", "https://example.com/mcp"),
        ("http://example.com:80/mcp", "http://example.com/mcp"),
        ("https://example.com:8443/mcp", "https://example.com:8443/mcp"),
        ("http://example.com:443/mcp", "http://example.com:443/mcp"),
        ("https://example.com/mcp/", "https://example.com/mcp"),
        ("https://example.com/", "https://example.com"),
        ("https://[::1]:443/mcp", "https://[::1]/mcp"),
        ("https://example.com/mcp?tenant=a", "https://example.com/mcp?tenant=a"),
    ],
)
def test_normalise_resource_folds_case_default_port_and_trailing_slash(value, expected):
    assert normalise_resource(value) == expected


@pytest.mark.parametrize("value", ["https://example.com/mcp#frag", "ftp://example.com/mcp", "urn:example:mcp",
                                   "example.com/mcp", "https:///mcp", ""])
def test_normalise_resource_refuses_fragments_and_non_http_values(value):
    assert normalise_resource(value) is None


# -- client metadata (RFC 7591) ----------------------------------------------------------------------------------


def dcr(data):
    return validate_metadata(data, CATALOG, auth_methods=AUTH_METHODS, default_auth="client_secret_basic")


def cimd(data):
    return validate_metadata(data, CATALOG, auth_methods=CIMD_AUTH_METHODS, default_auth="none")


def public_jwks() -> dict:
    return {"keys": [ECKey.generate_key("P-256", private=True).as_dict(private=False)]}


def test_metadata_defaults_to_both_grant_types_and_the_given_auth_method():
    assert dcr({"redirect_uris": [CALLBACK]}) == {
        "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "client_secret_basic",
        "grant_types": ["authorization_code", "refresh_token"], "client_name": None, "scope": None,
        "jwks_uri": None, "jwks": None,
    }
    assert cimd({"redirect_uris": [CALLBACK]})["token_endpoint_auth_method"] == "none"


def test_metadata_drops_unknown_scopes_and_duplicates():
    assert dcr({"redirect_uris": [CALLBACK], "scope": "bogus notes.read openid notes.read"})["scope"] == "notes.read"
    # only unknown scopes: no restriction (None), not "no scope at all"
    assert dcr({"redirect_uris": [CALLBACK], "scope": "bogus"})["scope"] is None


def test_metadata_deduplicates_redirect_uris_and_trims_the_name():
    got = dcr({"redirect_uris": [CALLBACK, CALLBACK], "client_name": "  ChatGPT  "})
    assert got["redirect_uris"] == [CALLBACK]
    assert got["client_name"] == "ChatGPT"


@pytest.mark.parametrize("uri", ["http://127.0.0.1:5173/cb", "http://localhost/cb", "http://[::1]:8080/cb",
                                 "https://example.com/cb?x=1"])
def test_metadata_accepts_https_and_loopback_http_redirects(uri):
    assert dcr({"redirect_uris": [uri]})["redirect_uris"] == [uri]


def test_metadata_accepts_private_key_jwt_with_inline_keys_or_a_key_url():
    keys = public_jwks()
    assert cimd({"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "private_key_jwt",
                 "jwks": keys})["jwks"] == keys
    assert cimd({"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "private_key_jwt",
                 "jwks_uri": "https://example.com/jwks.json"})["jwks_uri"] == "https://example.com/jwks.json"


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"redirect_uris": []},
        {"redirect_uris": CALLBACK},
        {"redirect_uris": ["http://example.com/cb"]},
        {"redirect_uris": ["http://10.0.0.1/cb"]},
        {"redirect_uris": ["https://example.com/cb#frag"]},
        {"redirect_uris": ["/relative/cb"]},
        {"redirect_uris": ["javascript:alert(1)"]},
        {"redirect_uris": [42]},
        {"redirect_uris": [f"https://example.com/cb{i}" for i in range(11)]},
        {"redirect_uris": ["https://chatgpt.com@evil.example/cb"]},
        {"redirect_uris": ["https://user:pass@example.com/cb"]},
        {"redirect_uris": ["https://evil.example\\.chatgpt.com/cb"]},
        {"redirect_uris": ["https://ch\u0430tgpt.com/cb"]},
        {"redirect_uris": ["https://chatgpt.com%40evil.example/cb"]},
    ],
    ids=["missing", "empty", "not-a-list", "http-public", "http-private", "fragment", "relative", "javascript",
         "not-a-string", "eleven", "userinfo-deceptive", "userinfo-password", "backslash", "look-alike", "escaped"],
)
def test_metadata_refuses_bad_redirect_uris(data):
    with pytest.raises(ClientMetadataError) as caught:
        dcr(data)
    assert caught.value.error == "invalid_redirect_uri"


def test_metadata_accepts_ten_redirect_uris():
    uris = [f"https://example.com/cb{i}" for i in range(10)]
    assert dcr({"redirect_uris": uris})["redirect_uris"] == uris


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"response_types": ["token"]}, "response_types"),
        ({"response_types": ["code", "token"]}, "response_types"),
        ({"grant_types": ["refresh_token"]}, "grant_types"),
        ({"grant_types": ["authorization_code", "client_credentials"]}, "grant_types"),
        ({"grant_types": "authorization_code"}, "grant_types"),
        ({"token_endpoint_auth_method": "client_secret_jwt"}, "token_endpoint_auth_method"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "private_key_jwt needs jwks_uri or jwks"),
        ({"jwks": {"keys": []}, "jwks_uri": "https://example.com/jwks.json"}, "mutually exclusive"),
        ({"jwks": {"keys": [{"kty": "nope"}]}}, "jwks: not a JSON Web Key Set"),
        ({"jwks": {"keys": [{"kty": "EC", "crv": "P-256", "x": "AA"}]}}, "jwks: not a JSON Web Key Set"),
        ({"jwks": "not a key set"}, "jwks: not a JSON Web Key Set"),
        ({"jwks": {"no": "keys"}}, "jwks: not a JSON Web Key Set"),
        ({"jwks_uri": "file:///etc/passwd"}, "jwks_uri"),
        ({"client_name": ""}, "client_name"),
        ({"client_name": "x" * 201}, "client_name"),
        ({"scope": ["notes.read"]}, "scope"),
    ],
)
def test_metadata_refuses_unsupported_values(extra, message):
    with pytest.raises(ClientMetadataError, match=message) as caught:
        dcr({"redirect_uris": [CALLBACK], **extra})
    assert caught.value.error == "invalid_client_metadata"


def test_cimd_metadata_refuses_secret_based_auth_methods():
    with pytest.raises(ClientMetadataError, match="token_endpoint_auth_method"):
        cimd({"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "client_secret_basic"})


@pytest.mark.parametrize("data", [None, [], "redirect_uris", 3])
def test_metadata_must_be_an_object(data):
    with pytest.raises(ClientMetadataError, match="JSON object"):
        dcr(data)


# -- caching of client metadata documents ------------------------------------------------------------------------

NOW = 1_700_000_000


def http_date(epoch: float) -> str:
    return email.utils.formatdate(epoch, usegmt=True)


@pytest.mark.parametrize(
    ("headers", "ttl"),
    [
        ({}, 3600),
        ({"cache-control": "public, max-age=600"}, 600),
        ({"cache-control": 'max-age="900"'}, 900),
        ({"cache-control": "s-maxage=900"}, 900),
        ({"cache-control": "MAX-AGE=1200"}, 1200),
        ({"cache-control": "no-store"}, 60),
        ({"cache-control": "private, no-cache"}, 60),
        ({"cache-control": "no-store, max-age=3600"}, 60),
        ({"expires": http_date(NOW + 7200)}, 7200),
        ({"expires": http_date(NOW - 10)}, 60),
        ({"expires": "not a date"}, 60),
        ({"cache-control": "max-age=600", "expires": http_date(NOW + 7200)}, 600),
        ({"cache-control": "max-age=600", "age": "100"}, 500),
        ({"cache-control": "max-age=600", "age": "590"}, 60),
        ({"cache-control": "max-age=5"}, 60),
        ({"cache-control": "max-age=0"}, 60),
        ({"cache-control": "max-age=9999999"}, 86400),
        ({"expires": http_date(NOW + 10 * 86400)}, 86400),
    ],
)
def test_cache_lifetime_follows_http_caching_headers_within_a_minute_and_a_day(headers, ttl):
    assert cache_lifetime(headers, NOW) == ttl


# -- signed browser values -----------------------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def test_signer_roundtrips_an_unexpired_payload():
    signer = Signer(b"k" * 32)
    payload = {"a": "acct_1", "r": "abc", "exp": int(time.time()) + 60}
    assert signer.unsign(signer.sign(payload)) == payload


def test_signer_rejects_a_tampered_payload():
    signer = Signer(b"k" * 32)
    value = signer.sign({"a": "acct_1", "exp": int(time.time()) + 60})
    _, mac = value.split(".")
    forged = b64(json.dumps({"a": "acct_2", "exp": int(time.time()) + 60}, separators=(",", ":")).encode())
    assert signer.unsign(f"{forged}.{mac}") is None


def test_signer_rejects_a_tampered_or_missing_mac():
    signer = Signer(b"k" * 32)
    value = signer.sign({"a": "acct_1", "exp": int(time.time()) + 60})
    data, mac = value.split(".")
    assert signer.unsign(f"{data}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}") is None
    assert signer.unsign(f"{data}.") is None
    assert signer.unsign(data) is None


def test_signer_rejects_a_value_signed_with_another_secret():
    value = Signer(b"a" * 32).sign({"a": "acct_1", "exp": int(time.time()) + 60})
    assert Signer(b"b" * 32).unsign(value) is None


def test_signer_rejects_an_expired_or_undated_payload():
    signer = Signer(b"k" * 32)
    assert signer.unsign(signer.sign({"a": "acct_1", "exp": int(time.time()) - 1})) is None
    assert signer.unsign(signer.sign({"a": "acct_1"})) is None


def test_signer_rejects_a_well_signed_non_object():
    signer = Signer(b"k" * 32)
    data = b64(b"[1, 2]")
    assert signer.unsign(f"{data}.{signer._mac(data.encode())}") is None


def test_csrf_token_is_deterministic_per_cookie_and_secret():
    signer = Signer(b"k" * 32)
    assert signer.csrf_token("cookie-1") == signer.csrf_token("cookie-1")
    assert signer.csrf_token("cookie-1") != signer.csrf_token("cookie-2")
    assert Signer(b"j" * 32).csrf_token("cookie-1") != signer.csrf_token("cookie-1")


# -- passwords -------------------------------------------------------------------------------------------------


def test_a_password_hash_verifies_only_the_same_password():
    stored = hash_password("correct horse")
    assert stored.startswith("scrypt$")
    assert verify_password("correct horse", stored) is True
    assert verify_password("correct horsE", stored) is False
    assert verify_password("", stored) is False


def test_two_hashes_of_one_password_differ_and_both_verify():
    first, second = hash_password("s3cret"), hash_password("s3cret")
    assert first != second
    assert verify_password("s3cret", first) is True
    assert verify_password("s3cret", second) is True


@pytest.mark.parametrize(
    "stored",
    ["", "garbage", "scrypt$15$8$1$salt", "bcrypt$15$8$1$AAAA$AAAA", "scrypt$x$8$1$AAAA$AAAA",
     "scrypt$-1$8$1$AAAA$AAAA", "scrypt$0$8$1$AAAA$AAAA", "scrypt$40$8$1$AAAA$AAAA", "scrypt$15$8$1$A$AAAA",
     "scrypt$15$8$1$AAAA$A", "scrypt$15$8$1$AAAA$AAAA$AAAA"],
)
def test_a_malformed_stored_hash_fails_verification_without_raising(stored):
    assert verify_password("anything", stored) is False


def test_the_dummy_hash_matches_no_password():
    assert verify_password("", DUMMY_HASH) is False
    assert verify_password("password", DUMMY_HASH) is False


# -- clients -----------------------------------------------------------------------------------------------------


def make_client(secret: str | None = None, redirect_uris: list[str] | None = None) -> Client:
    return Client(client_id="dcr_x", kind="dcr", client_name=None, redirect_uris=redirect_uris or [CALLBACK],
                  grant_types=["authorization_code", "refresh_token"], token_endpoint_auth_method="none",
                  scope=None, jwks_uri=None, jwks=None, client_secret_hash=digest(secret) if secret else None)


@pytest.mark.parametrize(("kind", "allowed"), [("static", "recipes.read"), ("dcr", "recipes.read recipes.write"),
                                               ("cimd", "recipes.read recipes.write")])
def test_only_an_operators_client_keeps_to_its_registered_scope(kind, allowed):
    # A self-registered client (the SDK's registers with its first challenge's scope) may step up; the person
    # decides on the consent page. An operator's registration is the operator's decision.
    client = dataclasses.replace(make_client(), kind=kind, scope="recipes.read")
    assert client.get_allowed_scope("recipes.read recipes.write") == allowed


def test_redirect_uri_must_match_a_registered_one_exactly():
    client = make_client(redirect_uris=[CALLBACK, "http://127.0.0.1:5173/cb"])
    assert client.check_redirect_uri(CALLBACK) is True
    assert client.check_redirect_uri("http://127.0.0.1:5173/cb") is True


@pytest.mark.parametrize(
    "uri",
    [
        "https://chatgpt.com/connector_platform_oauth",  # prefix
        "https://chatgpt.com/",
        CALLBACK + "/evil",  # suffix
        CALLBACK + "?next=https://evil.example",
        CALLBACK + "#x",
        CALLBACK + "/",
        "HTTPS://CHATGPT.COM/connector_platform_oauth_redirect",  # case
        "https://chatgpt.com/Connector_platform_oauth_redirect",
        "https://chatgpt.com.evil.example/connector_platform_oauth_redirect",
        "https://chatgpt.com:443/connector_platform_oauth_redirect",
        "",
    ],
)
def test_redirect_uri_variants_are_refused(uri):
    assert make_client().check_redirect_uri(uri) is False


def test_client_secret_is_checked_against_its_digest():
    client = make_client(secret="s3cret-value")
    assert client.check_client_secret("s3cret-value") is True
    assert client.check_client_secret("s3cret-valuE") is False
    assert client.check_client_secret("") is False


def test_a_client_without_a_secret_accepts_no_secret():
    client = make_client()
    assert client.check_client_secret("") is False
    assert client.check_client_secret("anything") is False


def test_default_redirect_uri_only_when_exactly_one_is_registered():
    assert make_client().get_default_redirect_uri() == CALLBACK
    assert make_client(redirect_uris=[CALLBACK, "https://example.com/cb"]).get_default_redirect_uri() is None


# -- signing keys -------------------------------------------------------------------------------------------------


def private_ec(kid: str) -> dict:
    return {**ECKey.generate_key("P-256", private=True).as_dict(private=True), "kid": kid}


def private_rsa(kid: str) -> dict:
    return {**RSAKey.generate_key(2048, private=True).as_dict(private=True), "kid": kid}


def test_keyring_refuses_public_only_keys():
    public = {**ECKey.generate_key("P-256", private=True).as_dict(private=False), "kid": "pub"}
    with pytest.raises(KeyMaterialError, match="private"):
        KeyRing({"keys": [private_ec("a"), public]})


def test_keyring_refuses_an_ec_curve_it_cannot_sign_with_in_one_line():
    key = {**ECKey.generate_key("secp256k1", private=True).as_dict(private=True), "kid": "k1"}
    with pytest.raises(KeyMaterialError, match="APP_OAUTH_SIGNING_KEYS: EC curve secp256k1 is not supported"):
        KeyRing({"keys": [key]})


def test_keyring_refuses_duplicate_key_ids():
    with pytest.raises(KeyMaterialError, match="unique"):
        KeyRing({"keys": [private_ec("same"), private_rsa("same")]})


@pytest.mark.parametrize("jwks", [{}, {"keys": []}, {"keys": "x"}, [], "x"])
def test_keyring_refuses_an_empty_or_malformed_key_set(jwks):
    with pytest.raises(KeyMaterialError):
        KeyRing(jwks)


def test_keyring_publishes_no_private_key_members():
    ring = KeyRing({"keys": [private_ec("ec-1"), private_rsa("rsa-1")]})
    published = ring.public_jwks["keys"]
    assert [k["kid"] for k in published] == ["ec-1", "rsa-1"]
    assert [k["alg"] for k in published] == ["ES256", "RS256"]
    for key in published:
        assert not {"d", "p", "q", "dp", "dq", "qi", "oth", "k"} & set(key), key
    assert all(not key.is_private for key in ring.verify_keys)


def test_keyring_signs_with_the_first_key():
    ring = KeyRing({"keys": [private_rsa("new"), private_ec("old")]})
    assert (ring.current.kid, ring.current.alg) == ("new", "RS256")
    assert ring.algorithms == ["ES256", "RS256"]
    token = jwt.encode({"alg": ring.current.alg, "kid": ring.current.kid}, {"sub": "x"}, ring.current.key)
    decoded = jwt.decode(token, ring.verify_keys, algorithms=ring.algorithms)
    assert decoded.header["kid"] == "new"


def test_keyring_uses_the_thumbprint_when_a_key_has_no_kid():
    key = ECKey.generate_key("P-256", private=True)
    ring = KeyRing({"keys": [key.as_dict(private=True)]})
    assert ring.current.kid == key.thumbprint()


@pytest.fixture
def dev_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("APP_SECRET_KEY", "APP_OAUTH_SIGNING_KEYS", "APP_VAR_DIR"):
        monkeypatch.delenv(name, raising=False)
    return load_settings(var_dir=str(tmp_path / "var"), _env_file=None)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_generated_signing_keys_are_written_once_private_and_reused(dev_settings):
    first = load_keyring(None, dev_settings.var_dir)
    path = Path(dev_settings.var_dir) / KEYS_FILE
    assert first.generated is True
    assert mode(path) == 0o600
    written = path.read_text()
    second = load_keyring(None, dev_settings.var_dir)
    assert path.read_text() == written
    assert second.public_jwks == first.public_jwks
    assert second.current.kid == first.current.kid


def test_configured_key_material_is_used_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("APP_SECRET_KEY", "APP_OAUTH_SIGNING_KEYS", "APP_VAR_DIR"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(var_dir=str(tmp_path / "var"), secret_key="s" * 40, _env_file=None)
    assert load_secret(settings) == (b"s" * 40, False)
    ring = load_keyring(json.dumps({"keys": [private_ec("prod")]}), settings.var_dir)
    assert (ring.current.kid, ring.generated) == ("prod", False)
    assert not (tmp_path / "var").exists()


def test_configured_signing_keys_that_are_not_json_are_refused(tmp_path: Path):
    with pytest.raises(KeyMaterialError, match="not JSON"):
        load_keyring("{not json", str(tmp_path))


def test_a_providers_secret_by_its_own_name_is_read_not_warned_about_and_its_misspelling_is():
    from app.parts import discover_features, unknown_settings

    assert unknown_settings(discover_features(), ["APP_OIDC_CORP_CLIENT_SECRET",
                                                  "APP_OIDC_CORP_CLIENT_SECRTE",
                                                  "APP_DEMO_PASWORD"]) == [
        "APP_DEMO_PASWORD: no setting has this name, so it is ignored; did you mean "
        "APP_DEMO_PASSWORD?",
        "APP_OIDC_CORP_CLIENT_SECRTE: no setting has this name, so it is ignored"]


def test_a_renamed_setting_of_the_authorization_server_is_refused_with_its_new_name(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("APP_OAUTH_REGISTRATIONS_PER_HOUR", "20")
    with pytest.raises(SettingsError) as refused:
        load_part(AuthServerSettings, _env_file=None)
    assert refused.value.lines == ["APP_OAUTH_REGISTRATIONS_PER_HOUR: renamed to APP_LIMIT_REGISTRATIONS_PER_ADDRESS "
                                   "(a rate, e.g. 20/hour)"]


def test_a_bad_setting_of_the_authorization_server_is_one_line_naming_it_and_hiding_secrets():
    with pytest.raises(SettingsError) as refused:
        load_part(AuthServerSettings, limit_login_per_account="ten a minute", demo_password="short", _env_file=None)
    assert refused.value.lines == ["APP_DEMO_PASSWORD: must be at least 8 characters long",
                                   "APP_LIMIT_LOGIN_PER_ACCOUNT: 'ten a minute' is not a rate such as '5/minute' or "
                                   "'10 per 10 minutes' (got 'ten a minute')"]


@pytest.mark.parametrize(("variable", "value", "line"), [
    # A token's lifetime is a number: its name says token, yet what it got is repeated.
    ("APP_OAUTH_ACCESS_TOKEN_TTL", "5",
     "APP_OAUTH_ACCESS_TOKEN_TTL: must be 300 or more (got '5')"),
    ("APP_OAUTH_REFRESH_TOKEN_TTL", "soon",
     "APP_OAUTH_REFRESH_TOKEN_TTL: must be a whole number (got 'soon')"),
    ("APP_PASSWORD_LOGIN", "sometimes",
     "APP_PASSWORD_LOGIN: must be true or false (also yes/no, on/off, 1/0) (got 'sometimes')"),
    # A secret's value never is, in any words.
    ("APP_DEMO_PASSWORD", "short", "APP_DEMO_PASSWORD: must be at least 8 characters long"),
])
def test_a_bad_value_of_the_authorization_server_says_in_plain_words_what_it_got(
        monkeypatch: pytest.MonkeyPatch, variable: str, value: str, line: str):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as refused:
        load_part(AuthServerSettings, _env_file=None)
    assert refused.value.lines == [line]


def test_serve_refuses_a_bad_value_with_the_misspelt_name_said_first_and_writes_nothing(
        tmp_path: Path):
    from tests.e2e.server import free_port

    env = {"PATH": "/usr/bin:/bin", "APP_OAUTH_ACCESS_TOKEN_TTL": "5",
           "APP_DEMO_PASWORD": "x" * 12, "APP_DATABASE_URL": f"sqlite:///{tmp_path / 'app.db'}",
           "APP_VAR_DIR": str(tmp_path / "var")}
    done = subprocess.run([sys.executable, "-m", "app", "serve", "--port", str(free_port())],
                          cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "APP_DEMO_PASWORD: no setting has this name, so it is ignored; did you mean "
        "APP_DEMO_PASSWORD?",
        "APP_OAUTH_ACCESS_TOKEN_TTL: must be 300 or more (got '5')"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no database, no keys


@pytest.mark.parametrize("jwks_uri", ["http://keys.example/jwks.json", "https://user@keys.example/jwks.json", "ftp://x/"])
def test_a_key_url_off_https_is_refused_as_its_error_says(jwks_uri):
    with pytest.raises(ClientMetadataError, match=r"jwks_uri: an https URL \(http only on loopback\)"):
        cimd({"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "private_key_jwt", "jwks_uri": jwks_uri})
    assert cimd({"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "private_key_jwt",
                 "jwks_uri": "http://127.0.0.1:9/jwks.json"})["jwks_uri"] == "http://127.0.0.1:9/jwks.json"
