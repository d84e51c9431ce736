"""Pick a city from the hints (never trusted for anything but choosing cafés) and list its cafés."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlencode

from app.db import UnitOfWork
from app.features.cafes.models import Cafe
from app.features.cafes.repository import CafeRepository
from app.features.cafes.schemas import CafeOut, CafeRecommendations

MAX_CAFES = 4
# Map links open here (the widget declares this origin in its redirect_domains).
MAP_ORIGIN = "https://www.openstreetmap.org"

# Where to look when the user's city is unknown: the locale's own region first.
_DEFAULT_CITY_BY_LOCALE = {
    "pt-br": "sao-paulo", "pt": "lisbon", "es-mx": "mexico-city", "es": "madrid", "fr": "paris",
    "zh": "shanghai", "en-gb": "london", "en": "new-york",
}

# The languages this feature answers in: the keys of INTROS.
INTROS = {
    "en": {"here": "Here are some cafés in {city} you might enjoy:",
           "fallback": "I don't know cafés in {requested} yet, so here are some favourites in {city}:",
           "nohint": "Here are some well-loved cafés in {city}:"},
    "es": {"here": "Aquí tienes algunas cafeterías en {city} que te pueden gustar:",
           "fallback": "Todavía no conozco cafeterías en {requested}, así que aquí tienes algunas favoritas en {city}:",
           "nohint": "Aquí tienes algunas cafeterías muy queridas en {city}:"},
    "fr": {"here": "Voici quelques cafés à {city} qui pourraient vous plaire :",
           "fallback": "Je ne connais pas encore de cafés à {requested}, voici donc quelques favoris à {city} :",
           "nohint": "Voici quelques cafés très appréciés à {city} :"},
    "pt": {"here": "Aqui estão alguns cafés em {city} de que você pode gostar:",
           "fallback": "Ainda não conheço cafés em {requested}, então aqui estão alguns favoritos em {city}:",
           "nohint": "Aqui estão alguns cafés muito queridos em {city}:"},
    "zh": {"here": "以下是{city}一些你可能会喜欢的咖啡馆：",
           "fallback": "我还不了解{requested}的咖啡馆，这里是{city}的一些热门选择：",
           "nohint": "以下是{city}一些广受喜爱的咖啡馆："},
}


@dataclass(frozen=True)
class Recommendation:
    output: CafeRecommendations
    intro: str
    details: dict[str, dict]
    # The city as the answer's language writes it (the structured `city` stays its English name).
    city_name: str = ""


def normalize_city(raw: str) -> str:
    decomposed = unicodedata.normalize("NFKD", raw)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return re.sub(r"[\s.,'’-]+", " ", stripped).strip()[:80]


def _default_city_key(locale_tag: str | None) -> str:
    tag = (locale_tag or "").lower().replace("_", "-")
    parts = tag.split("-")
    for candidate in (f"{parts[0]}-{parts[-1]}" if len(parts) > 1 else None, parts[0]):
        if candidate and candidate in _DEFAULT_CITY_BY_LOCALE:
            return _DEFAULT_CITY_BY_LOCALE[candidate]
    return _DEFAULT_CITY_BY_LOCALE["en"]


def recommend(uow: UnitOfWork, language: str, locale_tag: str | None, city_hint: str | None) -> Recommendation:
    repo = uow.repository(CafeRepository)
    texts = INTROS.get(language, INTROS["en"])
    city = repo.city_by_alias(normalize_city(city_hint)) if city_hint else None
    if city is not None:
        intro = texts["here"]
    else:
        city = repo.city(_default_city_key(locale_tag))
        intro = texts["fallback"] if city_hint else texts["nohint"]
    if city is None:  # seed data missing: an honest empty answer, not an error
        return Recommendation(CafeRecommendations(city="", cafes=[]), "No cafés are known yet.", {})
    cafes = repo.cafes_in(city.key, MAX_CAFES)
    said = repo.specialties([c.id for c in cafes], language) if language != "en" else {}
    city_name = repo.city_name(city, language)
    return Recommendation(
        CafeRecommendations(city=city.name, cafes=[CafeOut(name=c.name, address=c.address) for c in cafes]),
        intro.format(city=city_name, requested=(city_hint or "").strip()[:80]),
        {c.id: _detail(c, said.get(c.id)) for c in cafes},
        city_name,
    )


def city_names(uow: UnitOfWork, language: str) -> list[str]:
    """The cities this feature knows cafés in, as a person reading ``language`` names them."""
    return uow.repository(CafeRepository).city_names(language)


def map_url(cafe: Cafe) -> str:
    return f"{MAP_ORIGIN}/search?{urlencode({'query': f'{cafe.name}, {cafe.address}'})}"


def _detail(cafe: Cafe, specialty: str | None = None) -> dict:
    """What the widget shows of a café, its description in the answer's language when kept."""
    return {"id": cafe.id, "name": cafe.name, "address": cafe.address, "neighborhood": cafe.neighborhood,
            "since": cafe.since, "specialty": specialty or cafe.specialty, "map_url": map_url(cafe),
            "lat": cafe.latitude, "lon": cafe.longitude}


LANGUAGES = tuple(INTROS)
