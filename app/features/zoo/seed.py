"""Load the zoo's animals (idempotent; likes are never reset)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.resources import files

from app.db import UnitOfWork
from app.feature import AccountProfile
from app.features.zoo.repository import AnimalRepository

ANIMALS = files("app.features.zoo") / "data" / "animals.json"


def seed(uow: UnitOfWork, demo_accounts: Sequence[AccountProfile] = ()) -> str:
    animals = json.loads(ANIMALS.read_text(encoding="utf-8"))
    uow.repository(AnimalRepository).save_all(animals)
    return f"{len(animals)} animals"
