"""Load the cities and cafés (idempotent), with every spelling users may send as an alias."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.resources import files

from app.db import UnitOfWork
from app.feature import AccountProfile
from app.features.cafes.repository import CafeRepository
from app.features.cafes.service import LANGUAGES, normalize_city

DATA = files("app.features.cafes") / "data"
CAFES = DATA / "cafes.json"


def seed(uow: UnitOfWork, demo_accounts: Sequence[AccountProfile] = ()) -> str:
    data = json.loads(CAFES.read_text(encoding="utf-8"))["cities"]
    cities = [{"key": c["key"], "name": c["name"], "country": c["country"]} for c in data]
    aliases: dict[str, str] = {}
    for c in data:
        for alias in [c["name"], c["key"].replace("-", " "), *c.get("names", {}).values(), *c.get("aliases", [])]:
            aliases.setdefault(normalize_city(alias), c["key"])
    names = [{"city_key": c["key"], "language": lang, "name": name}
             for c in data for lang, name in sorted(c.get("names", {}).items())]
    cafes = [{"id": cafe["id"], "city_key": c["key"], "name": cafe["name"], "address": cafe["address"],
              "neighborhood": cafe.get("neighborhood"), "since": cafe.get("since"),
              "specialty": cafe.get("specialty"),
              "latitude": cafe.get("lat"), "longitude": cafe.get("lon")}
             for c in data for cafe in c["cafes"]]
    known = {cafe["id"] for cafe in cafes}
    texts = [{"cafe_id": cafe_id, "language": lang, "specialty": words["specialty"]}
             for lang, by_id in translations().items()
             for cafe_id, words in by_id.items() if cafe_id in known]
    uow.repository(CafeRepository).save_all(
        cities, [{"alias": a, "city_key": k} for a, k in sorted(aliases.items())], names, cafes,
        texts)
    return f"{len(cities)} cities, {len(cafes)} cafés in {len(LANGUAGES)} languages"


def translations() -> dict[str, dict[str, dict[str, str]]]:
    """``data/i18n/<language>.json``: each café's description, by language and café id."""
    return {lang: json.loads((DATA / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
            for lang in LANGUAGES if lang != "en"}
