import pytest

from app.i18n import lookup, requested_locale


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        ("fr-CA", "fr"), ("pt-BR", "pt"), ("zh-Hans-CN", "zh"), ("es", "es"), ("EN-gb", "en"),
        ("de-DE", "en"), ("*", "en"), ("", "en"), (None, "en"), ("de, pt;q=0.8", "pt"),
        ("zh-x-private", "zh"), ("pt_PT", "pt"), ("x" * 200, "en"),
    ],
)
def test_lookup_truncates_tags_until_a_supported_language_matches(requested, expected):
    assert lookup(requested, ("en", "es", "fr", "pt", "zh")) == expected


def test_lookup_only_offers_the_languages_the_caller_ships():
    assert lookup("fr-CA", ("en", "de")) == "en"
    assert lookup("fr-CA", ("en", "de"), default="de") == "de"


def test_legacy_webplus_locale_key_is_read_when_openai_locale_is_absent():
    assert requested_locale({"webplus/i18n": "es-AR"}) == "es-AR"
    assert requested_locale({"openai/locale": "fr", "webplus/i18n": "es"}) == "fr"
    assert requested_locale({"openai/locale": 5}) is None
    assert requested_locale(None) is None
