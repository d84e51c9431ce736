"""What the consent and /account pages let a person tell apart: a client stepping up its scope
shows what the account already allowed it apart from what is new; "not you?" leads back to the
sign-in of the same request; /account's "disconnect an app" and "sign out" are different words
in every language, and signing out is not among an app's actions."""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from app.authserver.catalog import CATALOG
from app.authserver.pages import LANGUAGES
from app.main import create_app
from tests.e2e.linking_steps import PASSWORD

pytestmark = [pytest.mark.authserver, pytest.mark.demo("recipes")]

REDIRECT = "https://c.example/cb"
VERIFIER = "v" * 43
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(
    b"=").decode()


@pytest.fixture
def http(settings, tmp_path):
    app = create_app(settings.model_copy(update={"var_dir": str(tmp_path)}))
    with TestClient(app, base_url="https://testserver") as client:
        yield client


def _form(html: str, action: str) -> dict[str, str]:
    form = re.search(rf'<form method="post" action="{re.escape(action)}">(.*?)</form>', html, re.S)
    assert form is not None, html
    return {unescape(name): unescape(value)
            for name, value in re.findall(r'name="([^"]+)" value="([^"]*)"', form.group(1))}


def _client(http: TestClient, name: str = "Step-up client") -> str:
    registered = http.post("/register", json={
        "client_name": name, "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none", "scope": "recipes.read recipes.write"})
    assert registered.status_code == 201, registered.text
    return registered.json()["client_id"]


def _query(client_id: str, scope: str, **extra: str) -> dict[str, str]:
    return {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
            "scope": scope, "code_challenge": CHALLENGE, "code_challenge_method": "S256",
            "state": "s", **extra}


def _consent(http: TestClient, query: dict[str, str]) -> str:
    login = http.get("/authorize", params=query)
    assert login.status_code == 200, login.text
    consent = http.post("/authorize", data={**_form(login.text, "/authorize"),
                                            "username": "alice", "password": PASSWORD})
    assert consent.status_code == 200 and 'value="approve"' in consent.text, consent.text
    return consent.text


def _link(http: TestClient, client_id: str, scope: str) -> None:
    """Approve ``scope`` and redeem the code: the account's grant to the client."""
    page = _consent(http, _query(client_id, scope))
    decided = http.post("/authorize/consent", data={**_form(page, "/authorize/consent"),
                                                   "decision": "approve"},
                        follow_redirects=False)
    assert decided.status_code == 302, decided.text
    code = parse_qs(urlsplit(decided.headers["location"]).query)["code"][0]
    token = http.post("/token", data={"grant_type": "authorization_code", "code": code,
                                      "client_id": client_id, "redirect_uri": REDIRECT,
                                      "code_verifier": VERIFIER})
    assert token.status_code == 200, token.text


def _listed(page: str, label: str) -> list[str]:
    """The scope names of the list labelled by the element with id ``label``."""
    found = re.search(rf'<ul aria-labelledby="{label}"[^>]*>(.*?)</ul>', page, re.S)
    return re.findall(r"<code>([^<]+)</code>", found.group(1)) if found else []


def test_a_step_up_shows_what_was_allowed_apart_from_what_is_new(http: TestClient) -> None:
    client_id = _client(http)
    first = _consent(http, _query(client_id, "recipes.read"))
    assert _listed(first, "scopes-label") == ["recipes.read"]
    assert _listed(first, "granted-label") == []  # nothing allowed yet: no such list
    _link(http, client_id, "recipes.read")

    more = _consent(http, _query(client_id, "recipes.read recipes.write"))
    assert _listed(more, "granted-label") == ["recipes.read"]
    assert _listed(more, "scopes-label") == ["recipes.write"]
    assert "You already allowed it to:" in more and "It now also asks to:" in more

    again = _consent(http, _query(client_id, "recipes.read", ui_locales="fr"))
    assert _listed(again, "granted-label") == ["recipes.read"]
    assert _listed(again, "scopes-label") == []
    assert CATALOG["fr"]["consent.nothing_new"] in unescape(again)


def test_another_accounts_grant_is_not_shown_as_allowed(http: TestClient) -> None:
    client_id = _client(http)
    _link(http, client_id, "recipes.read")
    login = http.get("/authorize", params=_query(client_id, "recipes.read"))
    consent = http.post("/authorize", data={**_form(login.text, "/authorize"),
                                            "username": "bob", "password": PASSWORD})
    assert consent.status_code == 200, consent.text
    assert _listed(consent.text, "granted-label") == []
    assert _listed(consent.text, "scopes-label") == ["recipes.read"]


def test_another_clients_grant_or_a_disconnected_one_is_not_shown_as_allowed(
        http: TestClient) -> None:
    tag = uuid.uuid4().hex[:8]
    first, second = _client(http, f"First {tag}"), _client(http, f"Second {tag}")
    _link(http, first, "recipes.read")
    other = _consent(http, _query(second, "recipes.read"))
    assert _listed(other, "granted-label") == []
    assert _listed(other, "scopes-label") == ["recipes.read"]
    # The first client disconnected on /account: its consent asks anew.
    login = http.get("/account")
    assert http.post("/account/login", data={**_form(login.text, "/account/login"),
                                             "username": "alice", "password": PASSWORD},
                     follow_redirects=False).status_code == 303
    page = http.get("/account").text
    ours = [section for section in re.findall(r'<section class="grant">(.*?)</section>', page,
                                               re.S) if f"First {tag}</bdi></h2>" in section]
    assert len(ours) == 1, page
    disconnected = http.post("/account/disconnect", data=_form(ours[0], "/account/disconnect"),
                             follow_redirects=False)
    assert disconnected.status_code == 303, disconnected.text
    again = _consent(http, _query(first, "recipes.read"))
    assert _listed(again, "granted-label") == []
    assert _listed(again, "scopes-label") == ["recipes.read"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_not_you_leads_to_the_sign_in_of_the_same_request(http: TestClient,
                                                          language: str) -> None:
    client_id = _client(http)
    query = _query(client_id, "recipes.read", ui_locales=language)
    page = _consent(http, query)
    switch = re.search(r'<a href="([^"]+)">([^<]+)</a>', page)
    assert switch is not None, page
    assert unescape(switch.group(2)) == CATALOG[language]["consent.switch"]
    target = urlsplit(unescape(switch.group(1)))
    assert target.path == "/authorize"
    assert {k: v[0] for k, v in parse_qs(target.query).items()} == query
    again = http.get(unescape(switch.group(1)))
    assert again.status_code == 200 and 'name="password"' in again.text


@pytest.mark.parametrize("twice", ["resource", "client_id", "redirect_uri", "scope"])
def test_a_parameter_given_twice_is_refused_on_the_page_before_and_after_the_password(
        http: TestClient, twice: str) -> None:
    """authlib validates a query's first value where a dict reads its last: given twice, a
    resource passed the sign-in and crashed the consent page (500)."""
    client_id = _client(http)
    resource = http.get("/.well-known/oauth-protected-resource/mcp").json()["resource"]
    query = _query(client_id, "recipes.read", resource=resource, ui_locales="fr")
    other = {"resource": "https://evil.example/", "client_id": _client(http, "Other"),
             "redirect_uri": "https://evil.example/cb", "scope": "recipes.write"}[twice]
    doubled = [*query.items(), (twice, other)]
    expected = CATALOG["fr"]["error.repeated_parameter"].format(name=twice)
    asked = http.get("/authorize", params=doubled)
    assert asked.status_code == 400 and expected in unescape(asked.text), asked.text
    # The same request, once, reaches the password form; its hidden copy, doubled, is refused
    # after the password.
    login = http.get("/authorize", params=query)
    form = _form(login.text, "/authorize")
    form["oauth_request"] += f"&{twice}={other}"
    signed_in = http.post("/authorize", data={**form, "username": "alice", "password": PASSWORD})
    assert signed_in.status_code == 400 and expected in unescape(signed_in.text), signed_in.text


@pytest.mark.parametrize("language", LANGUAGES)
def test_account_tells_disconnecting_an_app_from_signing_out(http: TestClient,
                                                             language: str) -> None:
    # The account is shared with other tests: a name its other grants do not carry.
    name = f"Step-up client {uuid.uuid4().hex[:8]}"
    client_id = _client(http, name)
    _link(http, client_id, "recipes.read")
    login = http.get("/account", headers={"accept-language": language})
    signed_in = http.post("/account/login", data={**_form(login.text, "/account/login"),
                                                  "username": "alice", "password": PASSWORD},
                          follow_redirects=False)
    assert signed_in.status_code == 303
    page = http.get("/account", headers={"accept-language": language}).text
    # The account may hold other grants (other tests' clients): this client's section.
    ours = [section for section in re.findall(r'<section class="grant">(.*?)</section>', page,
                                               re.S) if f"{name}</bdi></h2>" in section]
    assert len(ours) == 1, page

    def label(html: str, action: str) -> str:
        found = re.search(rf'<form method="post" action="/account/{action}">.*?'
                          r"<button[^>]*>(.*?)</button>", html, re.S)
        assert found is not None, html
        return " ".join(unescape(re.sub(r"<[^>]+>", "", found.group(1))).split())

    disconnect, sign_out = label(ours[0], "disconnect"), label(page, "sign-out")
    assert name in disconnect  # which app it disconnects, on the button
    assert sign_out == CATALOG[language]["account.sign_out"]
    assert disconnect != sign_out and CATALOG[language]["account.sign_out"] not in disconnect
    # Signing out stands with the account's name, before the apps, not among an app's actions.
    assert page.index("/account/sign-out") < page.index('class="grant"')


def _english_fragments(language: str) -> set[str]:
    """The English words of the pages' catalogue and of the scopes that read differently in
    ``language``: the parts of each sentence between its placeholders, four letters or more."""
    from app.features.recipes import FEATURE  # noqa: PLC0415 (the scopes the flow asks for)

    pairs = [(CATALOG["en"][key], CATALOG[language][key]) for key in CATALOG["en"]]
    pairs += [(s.description["en"], s.description[language]) for s in FEATURE.scopes]
    found = set()
    for english, translated in pairs:
        for part in re.split(r"\{[^}]+\}", english):
            part = part.strip(" .:?,")
            if len(part) >= 4 and part not in translated:
                found.add(part)
    return found


def _visible(html: str) -> str:
    html = re.sub(r"<(style|title)>.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


@pytest.mark.parametrize("language", ["fr", "zh"])
def test_the_pages_in_french_and_chinese_hold_no_english_words(http: TestClient,
                                                               language: str) -> None:
    """Sign-in, a step-up consent, /account signed out and signed in: what a person reads there
    in ``language`` holds none of the English of the catalogue or the scopes."""
    name = f"Client {uuid.uuid4().hex[:8]}"
    client_id = _client(http, name)
    _link(http, client_id, "recipes.read")
    query = _query(client_id, "recipes.read recipes.write", ui_locales=language)
    login = http.get("/authorize", params=query)
    consent = http.post("/authorize", data={**_form(login.text, "/authorize"),
                                            "username": "alice", "password": PASSWORD})
    headers = {"accept-language": language}
    account_login = http.get("/account", headers=headers)
    http.post("/account/login", data={**_form(account_login.text, "/account/login"),
                                      "username": "alice", "password": PASSWORD},
              headers=headers, follow_redirects=False)
    account = http.get("/account", headers=headers)
    english = _english_fragments(language)
    assert len(english) > 40  # the catalogue was read: a check of nothing would pass
    for page in (login, consent, account_login, account):
        assert page.status_code == 200, page.text
        shown = _visible(page.text)
        assert [part for part in english if part in shown] == [], (page.url, shown)
