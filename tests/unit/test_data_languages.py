"""The demos' data in the five languages the widgets speak: each animal's words and each café's
description are kept in every language, and none is the English left unchanged, but for the
words that are the same in that language (listed here, each with the reason)."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

from app.features.cafes.seed import translations as cafe_translations
from app.features.zoo.seed import TRANSLATED
from app.features.zoo.seed import translations as animal_translations

pytestmark = pytest.mark.demo("zoo", "cafes")

LANGUAGES = ("es", "fr", "pt", "zh")
# (language, English text): the same word in that language, so the same text is right.
SAME_WORD = {
    ("fr", "Aquarium"), ("fr", "Axolotl"), ("fr", "Koala"), ("fr", "Lion"),
    ("es", "Kea"), ("es", "Koala"),
    ("pt", "Kea"),
}


def _animals() -> dict[str, dict]:
    data = files("app.features.zoo") / "data" / "animals.json"
    return {a["id"]: a for a in json.loads(data.read_text(encoding="utf-8"))}


def _cafes() -> dict[str, dict]:
    data = files("app.features.cafes") / "data" / "cafes.json"
    cities = json.loads(data.read_text(encoding="utf-8"))["cities"]
    return {cafe["id"]: cafe for city in cities for cafe in city["cafes"]}


CASES = [("zoo", _animals, animal_translations, TRANSLATED),
         ("cafes", _cafes, cafe_translations, ("specialty",))]


@pytest.mark.parametrize(("feature", "english", "translated", "fields"), CASES,
                         ids=[case[0] for case in CASES])
def test_every_row_is_in_every_language_and_none_is_the_english_unchanged(
        feature: str, english, translated, fields: tuple[str, ...]) -> None:
    source, by_language = english(), translated()
    assert sorted(by_language) == sorted(LANGUAGES), feature
    for language, rows in by_language.items():
        assert set(rows) == set(source), (feature, language, set(source) ^ set(rows))
        for row_id, words in rows.items():
            assert set(words) == set(fields), (feature, language, row_id)
            for field in fields:
                text, original = words[field], source[row_id][field]
                assert isinstance(text, str) and text.strip(), (feature, language, row_id, field)
                if text == original:
                    assert (language, original) in SAME_WORD, (
                        f"{feature} {row_id}.{field} in {language} is the English unchanged: "
                        f"{original!r}")


def test_chinese_has_no_latin_sentence_left() -> None:
    """A sentence left in English stands out in Chinese: Latin letters there are names only
    (a species' scientific name, a person, a café, a place), never three English words in a row."""
    import re

    english_run = re.compile(r"\b(?:the|and|of|with|in|a|is)\b(?:\W+[A-Za-z]+){2}", re.IGNORECASE)
    for rows in (animal_translations()["zh"], cafe_translations()["zh"]):
        for row_id, words in rows.items():
            for field, text in words.items():
                assert not english_run.search(text), (row_id, field, text)
