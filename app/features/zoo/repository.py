from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.upsert import upsert
from app.features.zoo.models import Animal, AnimalText


class AnimalRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def first(self, count: int | None) -> list[Animal]:
        """The first ``count`` animals by name (all of them for None)."""
        return list(self.session.scalars(select(Animal).order_by(Animal.name, Animal.id).limit(count)))

    def get(self, animal_id: str) -> Animal | None:
        return self.session.get(Animal, animal_id)

    def get_for_update(self, animal_id: str) -> Animal | None:
        """The animal, locked until the transaction ends (PostgreSQL row lock; SQLite writers
        already hold the database write lock from BEGIN IMMEDIATE)."""
        return self.session.get(Animal, animal_id, with_for_update=True, populate_existing=True)

    def texts(self, language: str) -> dict[str, AnimalText]:
        """Every animal's words in ``language``, by animal id (none for English: the animals')."""
        rows = self.session.scalars(select(AnimalText).where(AnimalText.language == language))
        return {row.animal_id: row for row in rows}

    def save_all(self, animals: list[dict], texts: Sequence[dict] = ()) -> None:
        upsert(self.session, Animal.__table__, animals)
        upsert(self.session, AnimalText.__table__, list(texts), key=("animal_id", "language"))
