"""APP_OIDC_PROVIDERS and APP_PASSWORD_LOGIN as an operator writes them, and the sign-in pages they shape."""

from __future__ import annotations

import json
import re

import pytest

from app.authserver import pages
from app.authserver.settings import AuthServerSettings
from app.authserver.upstream_config import DEFAULT_SCOPES, parse_providers
from app.settings import SettingsError, load_part

pytestmark = pytest.mark.authserver

GOOD = {"id": "corp", "name": "Corp SSO", "issuer": "https://login.corp.example", "client_id": "abc"}


def _load(monkeypatch: pytest.MonkeyPatch, providers: object, **env: str) -> AuthServerSettings:
    monkeypatch.setenv("APP_OIDC_PROVIDERS", providers if isinstance(providers, str) else json.dumps(providers))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return load_part(AuthServerSettings, _env_file=None)


def test_a_provider_gets_the_openid_scopes_and_no_secret_by_default(monkeypatch):
    (provider,) = _load(monkeypatch, [GOOD]).oidc_providers
    assert (provider.id, provider.scopes, provider.client_secret, provider.email_domains) == (
        "corp", DEFAULT_SCOPES, None, ())
    assert provider.secret_variable == "APP_OIDC_CORP_CLIENT_SECRET"


def test_the_secret_variable_wins_over_the_json_and_is_never_shown(monkeypatch):
    settings = _load(monkeypatch, [{**GOOD, "id": "my-idp", "client_secret": "in-json"}],
                     APP_OIDC_MY_IDP_CLIENT_SECRET="from-variable")
    (provider,) = settings.oidc_providers
    assert provider.client_secret == "from-variable"
    assert "from-variable" not in repr(settings) and "in-json" not in repr(settings)


@pytest.mark.parametrize(("entry", "message"), [
    ({**GOOD, "issuer": "http://login.corp.example"}, "entry 1 (corp): issuer must be an https URL"),
    ({**GOOD, "issuer": "https://login.corp.example?tenant=1"}, "issuer must be an https URL without query"),
    ({**GOOD, "id": "Corp!"}, "entry 1: id must be 1-32 lower-case letters"),
    ({**GOOD, "scopes": ["email"]}, "scopes must include openid"),
    ({**GOOD, "client_id": ""}, "client_id must be a non-empty string"),
    ({**GOOD, "tenant": "x"}, "unknown key 'tenant'"),
    ({**GOOD, "email_domains": ["not a domain"]}, "email_domains must be a list of domain names"),
    ({**GOOD, "required_claims": {"tid": []}}, "required_claims must map claim names to non-empty lists"),
    ("{not json", "not JSON"),
    ({"id": "corp"}, "must be a JSON list of provider objects"),
], ids=["http-issuer", "issuer-query", "id", "scopes", "client-id", "unknown-key", "domains", "claims", "json",
        "not-a-list"])
def test_a_bad_provider_list_is_one_line_naming_the_variable_and_the_entry(monkeypatch, entry, message):
    providers = entry if isinstance(entry, str) else [entry] if "name" in entry else entry
    with pytest.raises(SettingsError) as refused:
        _load(monkeypatch, providers)
    [line] = refused.value.lines
    assert line.startswith("APP_OIDC_PROVIDERS: ") and message in line, line
    assert "got" not in line  # the value may hold a secret: never repeated


def test_two_providers_with_one_id_are_refused():
    with pytest.raises(ValueError, match="'corp' is used twice"):
        parse_providers(json.dumps([GOOD, {**GOOD, "name": "Again"}]))


def test_a_loopback_http_issuer_is_accepted_for_a_provider_run_beside_the_server():
    (provider,) = parse_providers(json.dumps([{**GOOD, "issuer": "http://127.0.0.1:4000"}]))
    assert provider.issuer == "http://127.0.0.1:4000"


def test_an_issuer_keeps_its_trailing_slash_as_its_tokens_spell_it():
    (provider,) = parse_providers(json.dumps([{**GOOD, "issuer": "https://tenant.auth0.example/"}]))
    assert provider.issuer == "https://tenant.auth0.example/"


def test_password_login_off_without_a_provider_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv("APP_PASSWORD_LOGIN", "false")
    with pytest.raises(SettingsError) as refused:
        load_part(AuthServerSettings, _env_file=None)
    assert refused.value.lines == ["APP_PASSWORD_LOGIN=false needs APP_OIDC_PROVIDERS: nobody could sign in"]


def _login(**extra: object) -> str:
    return pages.Pages().render(pages.login_page(locale="en", client_name="ChatGPT", client_host="chatgpt.com",
                                                 action="/authorize", hidden={"oauth_request": "a=b"},
                                                 csrf_token="t", **extra))


def test_the_login_page_offers_each_provider_as_a_link_beside_the_password_form():
    html = _login(providers=[("Corp <SSO>", "/login/corp?oauth_request=a%3Db&x=1")])
    assert '<a class="provider" href="/login/corp?oauth_request=a%3Db&amp;x=1">Continue with Corp &lt;SSO&gt;</a>' \
        in html
    assert 'name="password"' in html and '<p class="or">or</p>' in html


def test_without_password_login_the_page_has_no_password_form():
    html = _login(providers=[("Corp", "/login/corp?x")], password=False)
    assert "<form" not in html and 'name="password"' not in html and "Continue with Corp" in html


def test_the_account_page_lists_grants_with_a_disconnect_form_each_and_escapes_client_names():
    html = pages.Pages().render(pages.account_page(locale="fr", account_name="Ann <b>", csrf_token="tok", grants=[
        pages.GrantView(id="g1", client="Evil <script>", host="evil.example", scopes=[("recipes.read", "Lire")],
                        linked="2026-12-01 10:00 UTC", last_used=None)]))
    assert "Evil &lt;script&gt;" in html and "<script>" not in html and "Ann &lt;b&gt;" in html
    assert "Pas encore utilisée" in html and "Connectée le 2026-12-01 10:00 UTC" in html
    disconnect = re.search(r'<form method="post" action="/account/disconnect">(.*?)</form>', html, re.S)
    assert disconnect and 'name="grant" value="g1"' in disconnect.group(1) and 'name="csrf_token" value="tok"' \
        in disconnect.group(1)
    assert 'action="/account/sign-out"' in html


def test_a_secret_variable_in_the_env_file_is_read_and_no_other_variable_sets_secrets(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("APP_OIDC_CORP_CLIENT_SECRET=from-the-file\n")
    monkeypatch.setenv("APP_OIDC_PROVIDERS", json.dumps([GOOD, {**GOOD, "id": "other", "name": "Other"}]))
    # A dict setting would be merged from every source: this name must not reach the secrets.
    monkeypatch.setenv("APP_OIDC_CLIENT_SECRETS", json.dumps({"APP_OIDC_OTHER_CLIENT_SECRET": "injected"}))
    corp, other = load_part(AuthServerSettings).oidc_providers
    assert (corp.client_secret, other.client_secret) == ("from-the-file", None)
