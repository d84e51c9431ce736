from __future__ import annotations

from sqlalchemy import select

from app.db import UnitOfWork
from app.features.zoo.models import Animal


class AnimalRepository:
    def __init__(self, uow: UnitOfWork) -> None:
        self.session = uow.session

    def first(self, count: int) -> list[Animal]:
        return list(self.session.scalars(select(Animal).order_by(Animal.name).limit(count)))

    def get(self, animal_id: str) -> Animal | None:
        return self.session.get(Animal, animal_id)
