"""Load the zoo's animals and their words in every language (idempotent; likes are never
reset)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.resources import files

from app.db import UnitOfWork
from app.feature import AccountProfile
from app.features.zoo.repository import AnimalRepository
from app.features.zoo.service import LANGUAGES

DATA = files("app.features.zoo") / "data"
ANIMALS = DATA / "animals.json"
TRANSLATED = ("species", "habitat", "diet", "fun_fact", "enclosure")


def translations() -> dict[str, dict[str, dict[str, str]]]:
    """``data/i18n/<language>.json``: each animal's words, by language and animal id."""
    return {lang: json.loads((DATA / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
            for lang in LANGUAGES if lang != "en"}


def seed(uow: UnitOfWork, demo_accounts: Sequence[AccountProfile] = ()) -> str:
    animals = json.loads(ANIMALS.read_text(encoding="utf-8"))
    known = {a["id"] for a in animals}
    texts = [{"animal_id": animal_id, "language": lang, **{f: words[f] for f in TRANSLATED}}
             for lang, by_id in translations().items()
             for animal_id, words in by_id.items() if animal_id in known]
    uow.repository(AnimalRepository).save_all(animals, texts)
    return f"{len(animals)} animals in {len(LANGUAGES)} languages"
