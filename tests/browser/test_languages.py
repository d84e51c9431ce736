"""The demos' data in the person's language: in fr-FR and zh-CN the zoo's species, habitats, diets,
enclosures and facts, and the cafés' descriptions and city, are shown in that language, none the
English left as it was (beyond the words that are the same there: tests/unit/test_data_languages.py
lists them). A screenshot of each widget in each language goes to the artifacts."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

from tests.browser.host import Host, artifacts_dir, expect
from tests.unit.test_data_languages import SAME_WORD

pytestmark = pytest.mark.demo("zoo", "cafes")

LOCALES = {"fr-FR": "fr", "zh-CN": "zh"}


def _english_animals() -> dict[str, dict]:
    data = files("app.features.zoo") / "data" / "animals.json"
    return {a["id"]: a for a in json.loads(data.read_text(encoding="utf-8"))}


def _english_cafes() -> dict[str, dict]:
    data = files("app.features.cafes") / "data" / "cafes.json"
    return {c["id"]: c for city in json.loads(data.read_text(encoding="utf-8"))["cities"]
            for c in city["cafes"]}


def _not_english(language: str, shown: str, english: str) -> bool:
    return shown != english or (language, english) in SAME_WORD


@pytest.mark.parametrize("locale", LOCALES)
def test_the_zoo_shows_its_animals_in_the_persons_language(host: Host, locale: str) -> None:
    language, english = LOCALES[locale], _english_animals()
    host.set_locale(locale)
    result = host.call("get_zoo_animals", {"count": 20})
    host.expect_state("zoo", "ready")
    assert result["_meta"]["locale"] == language
    cards = host.by_testid("animal-card")
    expect(cards).to_have_count(20)
    for card in cards.all():
        animal_id = card.get_attribute("data-animal-id") or ""
        species = card.locator(".muted").inner_text()
        assert _not_english(language, species, english[animal_id]["species"]), (locale, species)
    host.page.locator("iframe[data-testid=widget-frame]").screenshot(
        path=str(artifacts_dir() / f"widget-zoo-{language}.png"))

    penguin = host.frame.locator('[data-testid=animal-card][data-animal-id="king-penguin-admiral"]')
    penguin.click()
    details = host.by_testid("animal-details")
    expect(details).to_be_visible()
    shown = details.locator("dl.kv dd").all_inner_texts()
    source = english["king-penguin-admiral"]
    for field in ("habitat", "diet", "enclosure"):
        assert source[field] not in shown, (locale, field)
    fact = host.by_testid("fun-fact").inner_text()
    assert fact and fact != source["fun_fact"]
    if language == "zh":
        assert "王企鹅" in details.inner_text()
    else:
        assert "Manchot royal" in details.inner_text()


@pytest.mark.parametrize("locale", LOCALES)
def test_the_cafes_are_described_in_the_persons_language(host: Host, locale: str, tiles) -> None:
    language, english = LOCALES[locale], _english_cafes()
    host.set_locale(locale)
    result = host.call("recommend_cafe", {"city": "Shanghai"})
    host.expect_state("cafes", "ready")
    heading = host.by_testid("cafes-heading")
    expect(heading).to_have_text("上海的咖啡馆" if language == "zh" else "Cafés à Shanghai")
    expect(heading).to_have_attribute("data-city", result["structuredContent"]["city"])
    cards = host.by_testid("cafe-card")
    expect(cards).to_have_count(len(result["structuredContent"]["cafes"]))
    for card in cards.all():
        cafe_id = card.get_attribute("data-cafe-id") or ""
        said = card.get_by_test_id("cafe-specialty").inner_text()
        assert said and said != english[cafe_id]["specialty"], (locale, cafe_id)
    host.page.locator("iframe[data-testid=widget-frame]").screenshot(
        path=str(artifacts_dir() / f"widget-cafes-{language}.png"))
