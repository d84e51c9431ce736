from __future__ import annotations

from sqlalchemy import select

from app.db import UnitOfWork
from app.features.cafes.models import Cafe, City, CityAlias


class CafeRepository:
    def __init__(self, uow: UnitOfWork) -> None:
        self.session = uow.session

    def city_by_alias(self, alias: str) -> City | None:
        return self.session.scalar(select(City).join(CityAlias, CityAlias.city_key == City.key)
                                   .where(CityAlias.alias == alias))

    def city(self, key: str) -> City | None:
        return self.session.get(City, key)

    def cafes_in(self, city_key: str, limit: int) -> list[Cafe]:
        return list(self.session.scalars(select(Cafe).where(Cafe.city_key == city_key)
                                         .order_by(Cafe.since.is_(None), Cafe.since, Cafe.name).limit(limit)))
