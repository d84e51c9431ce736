"""The privacy and terms pages (app/directory): written from the server's configuration and from
what each installed part keeps, in the language asked for, inert whatever the operator's values
hold, or a redirect to the operator's own pages."""

from __future__ import annotations

import re
from html import unescape

import pytest
from starlette.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.inert import assert_inert

pytestmark = pytest.mark.any_database


def _client(settings: Settings, tmp_path, parts=(), **update) -> TestClient:
    app = create_app(settings.model_copy(update={"var_dir": str(tmp_path), **update}), parts=parts)
    return TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=False)


def _text(html: str) -> str:
    body = re.sub(r"<style>.*?</style>", "", html, flags=re.S)
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def test_the_pages_speak_the_language_asked_for_with_the_operators_details(settings, tmp_path):
    with _client(settings, tmp_path, operator_name="Example SAS",
                 operator_contact="privacy@example.com", operator_jurisdiction="France") as http:
        french = http.get("/privacy", headers={"accept-language": "de, fr-CA;q=0.8, en;q=0.5"})
        chinese = http.get("/terms?lang=zh", headers={"accept-language": "fr"})
        english = http.get("/terms")
    assert (french.status_code, french.headers["content-language"]) == (200, "fr")
    assert "Politique de confidentialité" in french.text
    assert "Example SAS exploite" in _text(french.text)
    assert '<a href="mailto:privacy@example.com">privacy@example.com</a>' in french.text
    assert chinese.headers["content-language"] == "zh-Hans"
    assert chinese.headers["vary"] == "accept-language"
    assert "本条款受 France 法律管辖。" in _text(chinese.text)
    assert '<a href="/privacy?lang=zh">隐私政策</a>' in chinese.text
    assert "These terms are governed by the law of France." in _text(english.text)
    for page in (french, chinese, english):
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        assert page.headers["content-type"].startswith("text/html")


def test_without_operator_details_the_pages_name_the_operator_of_the_app_and_no_law(
        settings, tmp_path):
    with _client(settings, tmp_path, server_title="Recipe Box") as http:
        privacy, terms = http.get("/privacy").text, http.get("/terms").text
    assert "The operator of Recipe Box runs Recipe Box" in _text(privacy)
    assert "your account included, write to the operator of this server." in _text(privacy)
    assert "governed by" not in _text(terms) and "Questions:" not in _text(terms)
    assert "mailto:" not in terms + privacy


def test_a_name_is_written_as_given_a_contact_url_in_any_case_is_a_link(settings, tmp_path):
    with _client(settings, tmp_path, operator_name="eBay Inc.",
                 operator_contact="HTTPS://help.example.com/privacy") as http:
        privacy = http.get("/privacy").text
    assert "eBay Inc. runs" in _text(privacy)
    assert '<a href="HTTPS://help.example.com/privacy">' in privacy


def test_traces_leaving_for_a_collector_are_said(settings, tmp_path):
    # The pages' routes alone: create_app says traced when it is given a tracer provider, whose
    # making is global (tests/e2e/test_observability.py runs one in its own server).
    from starlette.applications import Starlette

    from app.directory.routes import directory_routes

    for traced in (False, True):
        with TestClient(Starlette(routes=directory_routes(settings, [], traced))) as http:
            said = "Traces of each request" in _text(http.get("/privacy").text)
        assert said is traced


def test_hostile_operator_values_are_shown_as_text(settings, tmp_path):
    value = '"><script>alert(1)</script><a href="javascript:alert(2)">x</a>'
    with _client(settings, tmp_path, operator_name=value, operator_jurisdiction=value,
                 server_title=value[:100],
                 operator_contact="https://help.example.com/?q=\"><b>") as http:
        pages = [http.get("/privacy"), http.get("/terms"), http.get("/privacy?lang=es"),
                 http.get("/privacy?lang=%22%3E%3Cscript%3E")]  # a hostile language: English
    for page in pages:
        assert page.status_code == 200
        assert_inert(page.text, [value])


def test_the_operators_own_pages_take_their_place(settings, tmp_path):
    with _client(settings, tmp_path, privacy_url="https://example.com/privacy",
                 terms_url="https://example.com/terms") as http:
        privacy, terms = http.get("/privacy"), http.get("/terms")
    assert privacy.status_code == 302
    assert privacy.headers["location"] == "https://example.com/privacy"
    assert (terms.status_code, terms.headers["location"]) == (302, "https://example.com/terms")


def test_a_part_whose_privacy_sentence_has_no_english_is_refused_at_start(settings, tmp_path):
    from app.feature import Feature
    from app.parts import FeatureError

    odd = Feature(name="odd", privacy=lambda deps: [{"fr": "Rien n’est conservé."}])
    with pytest.raises(FeatureError, match="feature 'odd': a privacy sentence has no English"):
        create_app(settings.model_copy(update={"var_dir": str(tmp_path)}), features=[odd])
