from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from string import Formatter

import pytest

from app.authserver import pages as builders
from app.authserver.pages import (
    CATALOG,
    LANGUAGES,
    LOGIN_ERRORS,
    PAGE_CSP,
    Pages,
    negotiate,
    page_csp,
    text,
)

pytestmark = pytest.mark.authserver

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
# Strings allowed to read the same as English in another language (proper nouns); none today.
SAME_AS_ENGLISH: set[tuple[str, str]] = set()

EVIL = "<script>alert(1)</script>"
QUOTED = 'x" onfocus="alert(1)" data-x=\'y'


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list[Node | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def iter(self, tag: str | None = None):
        if tag is None or self.tag == tag:
            yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter(tag)

    def find_all(self, tag: str, **attrs: str) -> list[Node]:
        return [n for n in self.iter(tag) if all(n.attrs.get(k) == v for k, v in attrs.items())]

    def find(self, tag: str, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert len(found) == 1, f"expected one <{tag} {attrs}>, found {len(found)}"
        return found[0]


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag):
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.stack == [builder.root], "unclosed elements"
    return builder.root


PAGES = Pages()


def login_page(**args) -> str:
    return PAGES.render(builders.login_page(**args))


def consent_page(**args) -> str:
    return PAGES.render(builders.consent_page(**args))


def error_page(**args) -> str:
    return PAGES.render(builders.error_page(**args))


def login(**overrides) -> str:
    args = dict(locale="en", client_name="ChatGPT", client_host="chatgpt.com",
                action="/oauth/login",
                hidden={"client_id": "https://chatgpt.com/oauth/client.json", "state": "s1"},
                csrf_token="tok")
    return login_page(**(args | overrides))


def consent(**overrides) -> str:
    args = dict(locale="en", client_name="ChatGPT", client_host="chatgpt.com", account_name="alice",
                scopes=[("recipes.read", "Read your saved recipes"),
                        ("recipes.write", "Save and edit recipes")],
                action="/oauth/consent", hidden={"request": "r1"}, csrf_token="tok")
    return consent_page(**(args | overrides))


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in Formatter().parse(template) if name}


# --- negotiation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ui_locales", "accept_language", "expected"),
    [
        ("fr", "es-ES,es;q=0.9", "fr"),  # ui_locales wins
        ("de fr-CA es", "pt", "fr"),  # first supported of ui_locales, in order
        ("de it", "es-MX,en;q=0.5", "es"),  # nothing supported in ui_locales: Accept-Language
        (None, "pt-BR,pt;q=0.9", "pt"),
        (None, "zh-CN,zh;q=0.9,en;q=0.8", "zh"),
        ("zh-Hans-CN", None, "zh"),
        (None, "de-DE,it;q=0.8", "en"),
        (None, "en;q=0.2, fr;q=0.9", "fr"),  # by quality, not header order
        (None, "fr;q=0, es", "es"),  # q=0 means "not acceptable"
        (None, "*", "en"),
        ("", "", "en"),
        (None, None, "en"),
        ("tlh", None, "en"),
    ],
)
def test_negotiate(ui_locales, accept_language, expected):
    assert negotiate(ui_locales, accept_language) == expected


# --- catalog --------------------------------------------------------------------------------------


def test_every_language_has_every_key_with_the_same_placeholders():
    assert tuple(CATALOG) == LANGUAGES
    english = CATALOG["en"]
    for lang in LANGUAGES:
        assert set(CATALOG[lang]) == set(english), lang
        for key, value in CATALOG[lang].items():
            assert value.strip(), (lang, key)
            assert placeholders(value) == placeholders(english[key]), (lang, key)


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_translations_are_not_english_left_in_place(lang):
    english_values = set(CATALOG["en"].values())
    untranslated = [key for key, value in CATALOG[lang].items()
                    if value in english_values and (lang, key) not in SAME_AS_ENGLISH]
    assert untranslated == []


def test_login_errors_are_catalog_keys():
    assert set(LOGIN_ERRORS) == {"bad_credentials", "csrf", "locked"}
    for lang in LANGUAGES:
        for code, key in LOGIN_ERRORS.items():
            assert text(lang, key) == text(lang, code) == CATALOG[lang][code]


def test_text_falls_back_to_english_and_normalizes_tags():
    assert text("de", "login.password") == "Password"
    assert text("pt-BR", "login.password") == "Senha"
    assert text("en", "consent.signed_in_as", account="bob") == "Signed in as bob"
    with pytest.raises(KeyError):
        text("en", "no.such.key")


# --- structure and accessibility ------------------------------------------------------------------


@pytest.mark.parametrize(("lang", "html_lang"), [("en", "en"), ("es", "es"), ("fr", "fr"),
                                                 ("pt", "pt-BR"), ("zh", "zh-Hans")])
def test_every_page_declares_its_language_title_viewport_and_one_h1(lang, html_lang):
    for page in (login(locale=lang), consent(locale=lang),
                 error_page(locale=lang, message="Unknown client.")):
        doc = parse(page)
        assert page.startswith("<!doctype html>")
        assert doc.find("html").attrs["lang"] == html_lang
        assert doc.find("meta", name="viewport").attrs["content"].startswith("width=device-width")
        assert doc.find("title").text.strip()
        assert len(doc.find_all("h1")) == 1
        assert not doc.find_all("script") and not doc.find_all("link") and not doc.find_all("img")
        assert "prefers-color-scheme" in doc.find("style").text
        assert ":focus-visible" in doc.find("style").text


def test_login_form_fields_and_bound_labels():
    doc = parse(login(locale="es", username="ana"))
    form = doc.find("form")
    assert form.attrs["method"] == "post" and form.attrs["action"] == "/oauth/login"
    username = form.find("input", name="username")
    password = form.find("input", name="password")
    assert username.attrs["autocomplete"] == "username"
    assert "required" in username.attrs and "autofocus" in username.attrs
    assert username.attrs["value"] == "ana"
    assert (password.attrs["type"] == "password"
            and password.attrs["autocomplete"] == "current-password")
    assert "required" in password.attrs and "value" not in password.attrs
    labels = {label.attrs["for"]: label.text for label in form.find_all("label")}
    assert labels == {username.attrs["id"]: "Nombre de usuario", password.attrs["id"]: "Contraseña"}
    assert form.find("input", name="csrf_token").attrs == {"type": "hidden", "name": "csrf_token",
                                                           "value": "tok"}
    assert form.find("input", name="state").attrs["type"] == "hidden"
    assert (form.find("button").attrs["type"] == "submit"
            and form.find("button").text == "Iniciar sesión")
    assert not [node for node in doc.iter() if node.attrs.get("role") == "alert"]
    assert "aria-invalid" not in username.attrs


def test_login_error_is_an_alert_the_fields_point_to():
    message = text("fr", "bad_credentials")
    doc = parse(login(locale="fr", error=message))
    alert = doc.find("p", role="alert")
    assert alert.text == message
    for name in ("username", "password"):
        field_ = doc.find("input", name=name)
        assert field_.attrs["aria-invalid"] == "true"
        assert field_.attrs["aria-describedby"] == alert.attrs["id"]


def test_consent_lists_scopes_and_offers_approve_and_deny():
    doc = parse(consent(locale="en"))
    intro = doc.find("main").find_all("p")[0].text
    assert intro == "ChatGPT (chatgpt.com) wants to access your account alice."
    items = doc.find("ul").find_all("li")
    assert [li.find("code").text for li in items] == ["recipes.read", "recipes.write"]
    assert [li.children[0].strip() for li in items] == ["Read your saved recipes",
                                                         "Save and edit recipes"]
    form = doc.find("form")
    assert form.attrs["method"] == "post" and form.attrs["action"] == "/oauth/consent"
    assert form.find("input", name="csrf_token").attrs["value"] == "tok"
    assert form.find("input", name="request").attrs["value"] == "r1"
    buttons = {b.attrs["value"]: b for b in form.find_all("button", name="decision")}
    assert set(buttons) == {"approve", "deny"}
    assert (buttons["approve"].text == "Allow"
            and "primary" in buttons["approve"].attrs.get("class", ""))
    assert buttons["deny"].text == "Deny"
    assert "Signed in as alice" in doc.find("main").text


def test_consent_without_scopes_asks_only_for_identity():
    doc = parse(consent(locale="pt", scopes=[]))
    assert not doc.find_all("ul")
    assert CATALOG["pt"]["consent.no_scopes"] in doc.find("main").text


def test_error_page_is_localized_around_the_message():
    doc = parse(error_page(locale="zh", message="Unknown client_id.", message_lang="en"))
    assert doc.find("h1").text == "此登录请求无法继续"
    assert doc.find("title").text == "此登录请求无法继续"
    assert doc.find("p", lang="en").text == "Unknown client_id."
    assert "您可以关闭此窗口" in doc.find("main").text


# --- escaping -------------------------------------------------------------------------------------


def test_untrusted_values_are_escaped_everywhere():
    hidden = {"state": QUOTED, 'na"me': "v"}
    pages = [
        login(client_name=EVIL, client_host=EVIL, hidden=hidden, csrf_token=QUOTED, error=EVIL,
              username=QUOTED, action=QUOTED),
        consent(client_name=EVIL, client_host=EVIL, account_name=EVIL, scopes=[(EVIL, EVIL)],
                hidden=hidden, csrf_token=QUOTED, action=QUOTED),
        error_page(locale="en", message=EVIL),
    ]
    for page in pages:
        assert EVIL not in page and "<script" not in page
        assert QUOTED not in page
        doc = parse(page)
        assert not doc.find_all("script")
        assert not any("onfocus" in node.attrs or "data-x" in node.attrs for node in doc.iter())
        assert EVIL in doc.find("main").text  # shown as text, intact
    for page in pages[:2]:
        form = parse(page).find("form")
        assert form.attrs["action"] == QUOTED
        assert form.find("input", name="state").attrs["value"] == QUOTED
        assert form.find("input", name='na"me').attrs["value"] == "v"
        assert form.find("input", name="csrf_token").attrs["value"] == QUOTED
    assert parse(pages[0]).find("input", name="username").attrs["value"] == QUOTED


@pytest.mark.parametrize("name", ["decision", "csrf_token", "username", "password"])
def test_hidden_fields_cannot_shadow_the_forms_own(name):
    with pytest.raises(ValueError, match=name):
        consent(hidden={name: "approve"})
    with pytest.raises(ValueError, match=name):
        login(hidden={name: "x"})


# --- Content-Security-Policy ----------------------------------------------------------------------


def test_page_csp_admits_the_redirect_origin_for_form_action():
    assert page_csp() == PAGE_CSP
    assert "form-action 'self' https://chatgpt.com;" in page_csp(
        "https://chatgpt.com/connector_platform_oauth_redirect")
    assert "form-action 'self' http://localhost:8765;" in page_csp(
        "http://user@LOCALHOST:8765/cb?x=1")
    assert "form-action 'self' cursor:;" in page_csp("cursor://anysphere.cursor-mcp/oauth/callback")
    assert "form-action 'self' http:;" in page_csp("http://[::1]:8080/cb")
    injected = page_csp("https://evil.example; script-src * 'unsafe-inline'")
    assert "script-src" not in injected and "form-action 'self' https:;" in injected
    assert page_csp("not a uri") == PAGE_CSP


def test_french_puts_a_no_break_space_before_double_punctuation():
    # A plain space lets the "?", ":" or ";" wrap to a line of its own.
    assert [key for key, value in CATALOG["fr"].items() if re.search(r" [?:;!]", value)] == []


def test_names_from_outside_are_isolated_from_the_sentence_around_them():
    # bdi: a right-to-left name, or one ending in a bidi control, cannot reorder the sentence it
    # sits in.
    names = "\u202eCorp", "corp.example", "\u05d0lice"
    consent_doc = parse(consent(client_name=names[0], client_host=names[1], account_name=names[2]))
    assert [node.text for node in consent_doc.iter("bdi")] == [names[0], names[1], names[2],
                                                               names[2]]
    login_doc = parse(login(client_name=names[0], client_host=names[1]))
    assert [node.text for node in login_doc.iter("bdi")] == [names[0], names[1]]
    account_doc = parse(PAGES.render(builders.account_page(
        locale="en", account_name=names[2], csrf_token="t", grants=[builders.GrantView(
            id="g", client=names[0], host=names[1], scopes=[], linked="today", last_used=None)])))
    # The account, then each app: its name, its host, and its name again on its Disconnect button.
    assert [node.text for node in account_doc.iter("bdi")] == [names[2], names[0], names[1],
                                                               names[0]]
